package sweep

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/report"
)

// SchemaVersion is the version of the JSON written by WriteJSON (described
// in docs/sweep.md).
const SchemaVersion = 1

type jsonResult struct {
	campaign.Envelope
	BaseRate      float64      `json:"base_sessions_per_hour"`
	Axis          string       `json:"axis,omitempty"` // "connected"; absent: the rate
	BaseConnected int          `json:"base_connected,omitempty"`
	BaseUsers     int          `json:"base_users,omitempty"` // users of the mix at 100%, axis users
	Iterations    int          `json:"iterations"`
	Partial       bool         `json:"partial"`
	PartialReason string       `json:"partial_reason"`
	Levels        []jsonLevel  `json:"levels"`
	Capacity      *float64     `json:"capacity_percent"` // null: no level passed
	SPECRule      jsonSPECRule `json:"spec_rule"`
}

type jsonSPECRule struct {
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

type jsonLevel struct {
	Percent         float64         `json:"percent"`
	TargetPerHour   float64         `json:"target_per_hour"`
	Connected       int             `json:"connected,omitempty"`
	PopulationUsers int             `json:"population_users,omitempty"` // users of the mix, axis users
	Held            float64         `json:"held_median,omitempty"`
	AchievedPerHour float64         `json:"achieved_per_hour_median"`
	EquivalentUsers float64         `json:"equivalent_users_median"`
	Late            int64           `json:"late"`
	Dropped         int64           `json:"dropped"`
	WorstPercent    float64         `json:"worst_percent_compliant_median"`
	WorstFunction   string          `json:"worst_function"`
	ErrorPercent    float64         `json:"error_percent_median"`
	Delivery        *jsonDelivery   `json:"delivery"` // null: not measured
	Verdict         string          `json:"verdict"`
	Iterations      []jsonIteration `json:"iterations"`
}

type jsonDelivery struct {
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	Corrupted  int64 `json:"corrupted"`
}

type jsonIteration struct {
	Verdict Verdict         `json:"verdict"`
	Error   string          `json:"error,omitempty"`
	Report  json.RawMessage `json:"report"` // report.WriteJSON form; null when none
}

// WriteJSON writes r as one JSON document: the sweep's figures per level
// and, for each iteration, its verdict and the whole run report in the form
// report.WriteJSON writes (readable with report.ReadJSON). It performs I/O
// only on w.
func (r *Result) WriteJSON(w io.Writer) error {
	j := jsonResult{
		Envelope: campaign.Envelope{Schema: "mailbench-sweep", SchemaVersion: SchemaVersion, Name: r.Name, Config: r.Config, Embedded: r.Embedded},
		BaseRate: r.BaseRate, Iterations: r.Iterations,
		Partial: r.Partial, PartialReason: r.PartialReason, Levels: []jsonLevel{},
	}
	if r.Axis == AxisConnected {
		j.Axis, j.BaseConnected = r.Axis, r.BaseConnected
	}
	if r.Axis == AxisUsers {
		j.Axis, j.BaseUsers = r.Axis, r.BaseUsers
	}
	if l, ok := r.Capacity(); ok {
		j.Capacity = &l.Percent
	}
	j.SPECRule.Pass, j.SPECRule.Reason = r.SPECRule()
	for _, l := range r.Levels {
		jl := jsonLevel{
			Percent: l.Percent, TargetPerHour: l.TargetPerHour, AchievedPerHour: l.AchievedPerHour, Held: l.Held,
			Connected:       map[bool]int{true: l.Connected}[r.Axis == AxisConnected],
			PopulationUsers: l.PopulationUsers,
			EquivalentUsers: l.EquivalentUsers, Late: l.Late, Dropped: l.Dropped,
			WorstPercent: l.WorstPercent, WorstFunction: l.WorstFunction, ErrorPercent: l.ErrorPercent,
			Verdict: l.Verdict(), Iterations: []jsonIteration{},
		}
		if l.DeliveryMeasured {
			jl.Delivery = &jsonDelivery{Lost: l.Lost, Duplicated: l.Duplicated, Corrupted: l.Corrupted}
		}
		for _, it := range l.Iterations {
			ji := jsonIteration{Verdict: it.Verdict(), Error: it.Err}
			var err error
			if ji.Report, err = report.EmbeddedJSON(it.Run); err != nil {
				return err
			}
			jl.Iterations = append(jl.Iterations, ji)
		}
		j.Levels = append(j.Levels, jl)
	}
	return report.WriteIndentedJSON(w, j)
}

// RunsAndLabels returns the runs that produced a report and a label for
// each ("80% #2"), for render.WriteHTML. It doesn't perform I/O.
func (r *Result) RunsAndLabels() ([]*report.Run, []string) {
	var runs []*report.Run
	var labels []string
	for _, l := range r.Levels {
		for k, it := range l.Iterations {
			if it.Run != nil {
				runs = append(runs, it.Run)
				labels = append(labels, fmt.Sprintf("%g%% #%d", l.Percent, k+1))
			}
		}
	}
	return runs, labels
}

// Result is a campaign result (its command renders it like the others).
var _ campaign.Result = (*Result)(nil)
