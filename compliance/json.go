package compliance

import (
	"encoding/json"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// jsonRow is a Row as JSON holds it: durations in whole microseconds.
type jsonRow struct {
	Function         measure.Function             `json:"function"`
	LimitUS          int64                        `json:"limit_us"`
	RequiredPercent  float64                      `json:"required_percent"`
	Operations       int64                        `json:"operations"`
	WithinLimit      int64                        `json:"within_limit"`
	Errors           int64                        `json:"errors"`
	ErrorsByClass    map[measure.ErrorClass]int64 `json:"errors_by_class,omitempty"`
	Cancelled        int64                        `json:"cancelled,omitempty"`
	PercentCompliant float64                      `json:"percent_compliant"`
	P50US            int64                        `json:"p50_us"`
	P95US            int64                        `json:"p95_us"`
	P99US            int64                        `json:"p99_us"`
	MaxUS            int64                        `json:"max_us"`
	Pass             bool                         `json:"pass"`
	Reason           string                       `json:"reason,omitempty"`
	NotMeasured      bool                         `json:"not_measured,omitempty"`
}

func microseconds(d time.Duration) int64 { return int64(d / time.Microsecond) }

// MarshalJSON writes r as a row of a report's table, its durations
// truncated to whole microseconds (limit_us, p50_us, ...).
func (r Row) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonRow{
		Function: r.Function, LimitUS: microseconds(r.Limit), RequiredPercent: r.RequiredPercent,
		Operations: r.Operations, WithinLimit: r.WithinLimit, Errors: r.Errors, ErrorsByClass: r.ErrorsByClass,
		Cancelled: r.Cancelled, PercentCompliant: r.PercentCompliant,
		P50US: microseconds(r.P50), P95US: microseconds(r.P95), P99US: microseconds(r.P99), MaxUS: microseconds(r.Max),
		Pass: r.Pass, Reason: r.Reason, NotMeasured: r.NotMeasured,
	})
}

// UnmarshalJSON reads what MarshalJSON wrote; no errors_by_class reads as
// nil.
func (r *Row) UnmarshalJSON(b []byte) error {
	var j jsonRow
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	*r = Row{
		Function: j.Function, Limit: us(j.LimitUS), RequiredPercent: j.RequiredPercent,
		Operations: j.Operations, WithinLimit: j.WithinLimit, Errors: j.Errors, Cancelled: j.Cancelled,
		PercentCompliant: j.PercentCompliant, P50: us(j.P50US), P95: us(j.P95US), P99: us(j.P99US), Max: us(j.MaxUS),
		Pass: j.Pass, Reason: j.Reason, NotMeasured: j.NotMeasured,
	}
	if len(j.ErrorsByClass) > 0 {
		r.ErrorsByClass = j.ErrorsByClass
	}
	return nil
}
