package compliance

import (
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// Row is one function's line of the compliance table.
type Row struct {
	Function        measure.Function
	Limit           time.Duration
	RequiredPercent float64
	Operations      int64
	WithinLimit     int64
	Errors          int64
	ErrorsByClass   map[measure.ErrorClass]int64 // nil when there are no errors
	// Cancelled operations were cut by mailbench (end of ramp-down,
	// Ctrl-C): not in Operations, Errors or the percentiles.
	Cancelled int64
	// PercentCompliant is 100 × WithinLimit / Operations (0 with no
	// operations). Pass is decided on it with a strict ">".
	PercentCompliant float64
	// Percentiles and maximum of all operations' durations, failures
	// included, from the HDR histogram (3 significant digits); 0 when the
	// function never ran.
	P50, P95, P99, Max time.Duration
	Pass               bool
	Reason             string // why the row fails; "" when it passes
	// NotMeasured: the config cannot run this function (Rule.NotMeasured).
	// Without operations the row neither passes nor fails: it is not in
	// Table.Failing but in Table.NotMeasured.
	NotMeasured bool
}

// ErrorRow is the "Error Rate" line: all failed operations of every function
// (with or without a rule) over all operations.
type ErrorRow struct {
	Operations int64   `json:"operations"`
	Errors     int64   `json:"errors"`
	Cancelled  int64   `json:"cancelled,omitempty"` // cut by mailbench; in neither Errors nor Operations
	Percent    float64 `json:"percent"`             // 100 × Errors / Operations (0 with no operations)
	MaxPercent float64 `json:"max_percent"`         // passes iff Percent < MaxPercent
	Pass       bool    `json:"pass"`
	Reason     string  `json:"reason,omitempty"` // why the row fails; "" when it passes
}

// Table is the evaluated compliance table of a run. Its JSON is the
// "compliance" object of a report (docs/report-schema.md).
type Table struct {
	Compliant bool     `json:"compliant"` // every row and the error row pass
	Failing   []string `json:"failing"`   // the failing rows' names, in table order; ErrorRateName for the error row
	// NotMeasured names the rows the config cannot run, in table order:
	// when there are any, the run is not a full SPEC-style run.
	NotMeasured []string `json:"not_measured,omitempty"`
	Rows        []Row    `json:"rows"`
	Errors      ErrorRow `json:"error_rate"`
}

// Evaluate builds the compliance table of stats against rules. Rows follow
// the SPEC table's order (measure.SPECFunctions), then the delivery rows,
// then other ruled functions in rules order; functions without a rule get no
// row but count towards the error rate. A ruled function that never ran
// fails with "no operations"; one whose stats were counted against a
// different limit than its rule fails too, since exact counts cannot be
// re-derived. A run with no operations at all fails the error row.
// Evaluate doesn't modify stats and doesn't perform I/O.
func Evaluate(stats map[measure.Function]*metrics.FunctionStats, rules Rules) Table {
	var t Table
	for _, rule := range rules.ordered() {
		row := Row{Function: rule.Function, Limit: rule.Limit, RequiredPercent: rule.RequiredPercent, NotMeasured: rule.NotMeasured}
		fs := stats[rule.Function]
		if fs != nil {
			row.Operations = fs.Operations
			row.WithinLimit = fs.WithinLimit
			row.Errors = fs.ErrorCount()
			row.Cancelled = fs.Cancelled
			if row.Errors > 0 {
				row.ErrorsByClass = make(map[measure.ErrorClass]int64)
				for k, v := range fs.Errors {
					if v != 0 {
						row.ErrorsByClass[k] = v
					}
				}
			}
			if fs.Operations > 0 && fs.Histogram != nil {
				h := fs.Histogram
				row.P50 = usToDuration(h.ValueAtPercentile(50))
				row.P95 = usToDuration(h.ValueAtPercentile(95))
				row.P99 = usToDuration(h.ValueAtPercentile(99))
				row.Max = usToDuration(h.Max())
			}
		}
		switch {
		case row.Operations <= 0 && rule.NotMeasured:
			t.NotMeasured = append(t.NotMeasured, string(row.Function))
			t.Rows = append(t.Rows, row)
			continue
		case row.Operations <= 0:
			row.Reason = noOperationsReason
		case fs.Limit != rule.Limit:
			row.Reason = fmt.Sprintf("counted against a %v limit, but the rule's limit is %v", fs.Limit, rule.Limit)
		default:
			row.PercentCompliant = 100 * float64(row.WithinLimit) / float64(row.Operations)
			row.Pass = row.PercentCompliant > rule.RequiredPercent
			if !row.Pass {
				row.Reason = fmt.Sprintf("%s%% is not >%s%%", FormatCompliant(row.WithinLimit, row.Operations), FormatPercentLimit(rule.RequiredPercent))
			}
		}
		if !row.Pass {
			t.Failing = append(t.Failing, string(row.Function))
		}
		t.Rows = append(t.Rows, row)
	}

	e := ErrorRow{MaxPercent: rules.MaxErrorPercent}
	for f, fs := range stats {
		// Delivery times are measurements of mail, not operations that can
		// fail: counting them would dilute the error rate. Lost mail is
		// judged by the delivery reconciliation instead.
		if measure.IsDelivery(f) {
			continue
		}
		e.Operations += fs.Operations
		e.Errors += fs.ErrorCount()
		e.Cancelled += fs.Cancelled
	}
	if e.Operations <= 0 {
		e.Reason = noOperationsReason
	} else {
		e.Percent = 100 * float64(e.Errors) / float64(e.Operations)
		e.Pass = e.Percent < e.MaxPercent
		if !e.Pass {
			e.Reason = fmt.Sprintf("%s%% is not <%s%%", FormatErrorRate(e.Errors, e.Operations), FormatPercentLimit(e.MaxPercent))
		}
	}
	t.Errors = e
	if !e.Pass {
		t.Failing = append(t.Failing, ErrorRateName)
	}
	t.Compliant = len(t.Failing) == 0
	return t
}

// Rules returns the rules t was evaluated against, recovered from its rows.
func (t Table) Rules() Rules {
	r := Rules{MaxErrorPercent: t.Errors.MaxPercent}
	for _, row := range t.Rows {
		r.Functions = append(r.Functions, Rule{Function: row.Function, Limit: row.Limit, RequiredPercent: row.RequiredPercent, NotMeasured: row.NotMeasured})
	}
	return r
}

// Row returns the row of function f, and whether t has one.
func (t Table) Row(f measure.Function) (Row, bool) {
	for _, row := range t.Rows {
		if row.Function == f {
			return row, true
		}
	}
	return Row{}, false
}

func usToDuration(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// FormatCompliant renders 100 × within / ops with two decimals, rounded
// DOWN, so that a percentage is never shown better than it is: 999/1000 is
// "99.90", 99999/100000 is "99.99" (not "100.00"). It returns "0.00" when
// ops is 0. It is exact for all int64 counts.
func FormatCompliant(within, ops int64) string { return formatRatio(within, ops, false) }

// FormatErrorRate renders 100 × errors / ops with two decimals, rounded UP
// (towards failing): 1 error in 100000 operations is "0.01", not "0.00".
func FormatErrorRate(errors, ops int64) string { return formatRatio(errors, ops, true) }

func formatRatio(num, den int64, up bool) string {
	if den <= 0 || num < 0 {
		return "0.00"
	}
	n := new(big.Int).Mul(big.NewInt(num), big.NewInt(10000))
	d := big.NewInt(den)
	q, m := new(big.Int).QuoRem(n, d, new(big.Int))
	if up && m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	hundredths := q.Int64()
	return fmt.Sprintf("%d.%02d", hundredths/100, hundredths%100)
}

// FormatPercentLimit renders a required or maximum percentage in the
// shortest form: 95 is "95", 99.5 is "99.5".
func FormatPercentLimit(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// FormatLimitSeconds renders a limit in seconds in the shortest form: 5 s is
// "5", 500 ms is "0.5".
func FormatLimitSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
