package sizing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
)

// Schema and SchemaVersion identify the JSON written by WriteJSON
// (docs/size.md).
const (
	Schema        = "mailbench-size"
	SchemaVersion = 1
)

// CapacityLine is the one-sentence result, e.g. "Capacity: 11,250
// sessions/hour ≡ 2,343 users (bracket [11,250, 11,700): +4.0%, confirmed by
// 2 runs)".
func (r *Result) CapacityLine() string {
	switch {
	case r.Low <= 0 && !math.IsInf(r.High, 1):
		return fmt.Sprintf("Capacity: none found: no compliant rate (the lowest failing run: %s sessions/hour)", report.FormatFloat(r.High, 0))
	case r.Low <= 0:
		return "Capacity: none found: no run passed"
	case math.IsInf(r.High, 1):
		return fmt.Sprintf("Capacity: at least %s sessions/hour ≡ %s users: no run failed, the upper end is not known",
			report.FormatFloat(r.Low, 0), report.FormatCount(int64(math.Floor(r.Users(r.Low)))))
	}
	state := "confirmed"
	switch {
	case !r.Converged:
		state = fmt.Sprintf("NOT within the precision of %s%%", report.FormatFloat(r.Precision, 1))
	case !r.Confirmed:
		state = "NOT confirmed"
	}
	return fmt.Sprintf("Capacity: %s sessions/hour ≡ %s users (bracket [%s, %s) sessions/hour ≡ [%s, %s) users: +%s%%, %s)",
		report.FormatFloat(r.Low, 0), report.FormatCount(int64(math.Floor(r.Users(r.Low)))),
		report.FormatFloat(r.Low, 0), report.FormatFloat(r.High, 0),
		report.FormatCount(int64(math.Floor(r.Users(r.Low)))), report.FormatCount(int64(math.Floor(r.Users(r.High)))),
		report.FormatFloat(r.BracketPercent(), 1), state)
}

// BoundingLine names the failing run that bounded the capacity; "" when
// none did.
func (r *Result) BoundingLine() string {
	if r.Bounding < 0 || r.Bounding >= len(r.Probes) {
		return ""
	}
	p := r.Probes[r.Bounding]
	return fmt.Sprintf("Bounded by run %d at %s sessions/hour (%s): %s", r.Bounding+1, report.FormatFloat(p.Rate, 0), p.Purpose, p.Reason)
}

// WriteText renders r: the capacity, the bounding run, why the search
// stopped early (if it did), then the curve as one table with a column per
// run by rate: target and achieved sessions/hour, verdict, and the p95 (ms)
// of every function that ran. It performs I/O only on w.
func (r *Result) WriteText(w io.Writer) error {
	target := "server under test"
	if r.Embedded {
		target = "embedded target"
	}
	t := &report.SideBySide{Title: []string{
		fmt.Sprintf("Sizing: %q (%s), precision %s%%, %d runs in %v", r.Name, target, report.FormatFloat(r.Precision, 1), len(r.Probes), r.Elapsed.Round(time.Second)),
	}}
	head := []string{r.CapacityLine()}
	if l := r.BoundingLine(); l != "" {
		head = append(head, l)
	}
	if r.Stopped != "" {
		head = append(head, "*** The search ended early: "+r.Stopped+". ***")
	}
	t.Title = append(t.Title, "")
	t.Title = append(t.Title, head...)
	t.Title = append(t.Title, "", "p95 per function against load (ms):")
	curve := r.Curve()
	for _, p := range curve {
		t.Head = append(t.Head, report.FormatFloat(p.Rate, 0)+"/h")
	}
	t.Add("purpose", func(i int) string { return string(curve[i].Purpose) })
	t.Add("achieved sessions/hour", func(i int) string { return report.FormatFloat(curve[i].Achieved, 0) })
	t.Add("verdict", func(i int) string {
		if curve[i].Pass {
			return "PASS"
		}
		return "FAIL"
	})
	for _, fn := range curveFunctions(curve) {
		t.Add(fn, func(i int) string {
			d, ok := curve[i].P95[fn]
			if !ok {
				return "-"
			}
			return report.FormatMS(d)
		})
	}
	t.Sections = append(t.Sections, []string{
		"Every run has its own schedule seed (docs/size.md); a run passes when it is complete, compliant and not",
		"generator-bound. The true limit lies in the bracket [highest passing, lowest failing).",
	})
	for i, p := range r.Probes {
		switch {
		case p.Err != "":
			t.Notes = append(t.Notes, fmt.Sprintf("note: run %d (%s sessions/hour) could not be carried out: %s", i+1, report.FormatFloat(p.Rate, 0), p.Err))
		case !p.Pass:
			t.Notes = append(t.Notes, fmt.Sprintf("note: run %d (%s sessions/hour, %s): %s", i+1, report.FormatFloat(p.Rate, 0), p.Purpose, p.Reason))
		}
	}
	return t.Write(w)
}

// curveFunctions lists the functions of any curve point, in SPEC order.
func curveFunctions(curve []CurvePoint) []string {
	var out []string
	for _, fn := range measure.AllFunctions {
		for _, p := range curve {
			if _, ok := p.P95[string(fn)]; ok {
				out = append(out, string(fn))
				break
			}
		}
	}
	return out
}

type jsonResult struct {
	Schema        string           `json:"schema"`
	SchemaVersion int              `json:"schema_version"`
	Name          string           `json:"name"`
	Config        string           `json:"config"`
	Embedded      bool             `json:"embedded"`
	PerUserHour   float64          `json:"sessions_per_user_hour"`
	Precision     float64          `json:"precision_percent"`
	BudgetS       float64          `json:"budget_s"`
	Start         float64          `json:"start_per_hour"`
	Capacity      jsonCapacity     `json:"capacity"`
	Stopped       string           `json:"stopped"`
	Bounding      *int             `json:"bounding_run"` // 0-based index into runs; null: none
	ElapsedS      float64          `json:"elapsed_s"`
	Runs          []jsonProbe      `json:"runs"`
	Curve         []jsonCurvePoint `json:"curve"`
}

type jsonCapacity struct {
	Found          bool     `json:"found"`
	Converged      bool     `json:"converged"`
	Confirmed      bool     `json:"confirmed"`
	SessionsPerH   float64  `json:"sessions_per_hour"` // the bracket's low end
	Users          float64  `json:"users"`
	BracketLow     float64  `json:"bracket_low"`
	BracketHigh    *float64 `json:"bracket_high"`    // null: no run failed
	BracketPercent *float64 `json:"bracket_percent"` // null: no bracket
}

type jsonProbe struct {
	Rate           float64         `json:"rate"`
	Seed           int64           `json:"seed"`
	Purpose        Purpose         `json:"purpose"`
	Pass           bool            `json:"pass"`
	Reason         string          `json:"reason,omitempty"`
	GeneratorBound bool            `json:"generator_bound"`
	Error          string          `json:"error,omitempty"`
	Report         json.RawMessage `json:"report"` // report.WriteJSON form; null when none
}

type jsonCurvePoint struct {
	Rate     float64          `json:"rate"`
	Achieved float64          `json:"achieved_per_hour"`
	Pass     bool             `json:"pass"`
	Purpose  Purpose          `json:"purpose"`
	P95US    map[string]int64 `json:"p95_us"`
}

// WriteJSON writes r as one JSON document (docs/size.md): the capacity and
// its bracket, every run with its whole report (report.WriteJSON form) and
// the curve. It performs I/O only on w.
func (r *Result) WriteJSON(w io.Writer) error {
	j := jsonResult{
		Schema: Schema, SchemaVersion: SchemaVersion, Name: r.Name, Config: r.Config, Embedded: r.Embedded,
		PerUserHour: r.PerUserHour, Precision: r.Precision, BudgetS: r.Budget.Seconds(), Start: r.Start,
		Stopped: r.Stopped, ElapsedS: r.Elapsed.Seconds(), Runs: []jsonProbe{}, Curve: []jsonCurvePoint{},
		Capacity: jsonCapacity{Found: r.Found(), Converged: r.Converged, Confirmed: r.Confirmed,
			SessionsPerH: r.Low, Users: r.Users(r.Low), BracketLow: r.Low},
	}
	if !math.IsInf(r.High, 1) {
		hi := r.High
		j.Capacity.BracketHigh = &hi
	}
	if b := r.BracketPercent(); !math.IsInf(b, 1) {
		j.Capacity.BracketPercent = &b
	}
	if r.Bounding >= 0 {
		b := r.Bounding
		j.Bounding = &b
	}
	for _, p := range r.Probes {
		jp := jsonProbe{Rate: p.Rate, Seed: p.Seed, Purpose: p.Purpose, Pass: p.Pass, Reason: p.Reason,
			GeneratorBound: p.GeneratorBound, Error: p.Err}
		var err error
		if jp.Report, err = report.EmbeddedJSON(p.Run); err != nil {
			return err
		}
		j.Runs = append(j.Runs, jp)
	}
	for _, c := range r.Curve() {
		jc := jsonCurvePoint{Rate: c.Rate, Achieved: c.Achieved, Pass: c.Pass, Purpose: c.Purpose, P95US: map[string]int64{}}
		for fn, d := range c.P95 {
			jc.P95US[fn] = d.Microseconds()
		}
		j.Curve = append(j.Curve, jc)
	}
	return report.WriteIndentedJSON(w, j)
}

// ReadJSON reads a document written by WriteJSON (at most
// report.MaxJSONSize bytes), every run's report through report.ReadJSON.
// The curve is recomputed from the reports. It performs I/O only on rd.
func ReadJSON(rd io.Reader) (*Result, error) {
	var j jsonResult
	if err := report.ReadStrictJSON(rd, "size result", &j); err != nil {
		return nil, err
	}
	if err := report.CheckSchema("size result", j.Schema, j.SchemaVersion, Schema, SchemaVersion); err != nil {
		return nil, err
	}
	r := &Result{
		Name: j.Name, Config: j.Config, Embedded: j.Embedded, PerUserHour: j.PerUserHour, Precision: j.Precision,
		Budget: time.Duration(j.BudgetS * float64(time.Second)), Start: j.Start, Low: j.Capacity.BracketLow, High: math.Inf(1),
		Converged: j.Capacity.Converged, Confirmed: j.Capacity.Confirmed, Stopped: j.Stopped, Bounding: -1,
		Elapsed: time.Duration(j.ElapsedS * float64(time.Second)),
	}
	if j.Capacity.BracketHigh != nil {
		r.High = *j.Capacity.BracketHigh
	}
	if j.Bounding != nil {
		if *j.Bounding < 0 || *j.Bounding >= len(j.Runs) {
			return nil, errors.New("read size result: bounding_run out of range")
		}
		r.Bounding = *j.Bounding
	}
	for i, jp := range j.Runs {
		p := Probe{Rate: jp.Rate, Seed: jp.Seed, Purpose: jp.Purpose, Pass: jp.Pass, Reason: jp.Reason, GeneratorBound: jp.GeneratorBound, Err: jp.Error}
		if len(jp.Report) > 0 && strings.TrimSpace(string(jp.Report)) != "null" {
			run, err := report.ReadJSON(bytes.NewReader(jp.Report))
			if err != nil {
				return nil, fmt.Errorf("read size result: run %d: %w", i+1, err)
			}
			p.Run = run
		}
		r.Probes = append(r.Probes, p)
	}
	return r, nil
}

// RunsAndLabels returns the runs that produced a report and a label for
// each ("11,250/h bisect #3"), for report.WriteHTML.
func (r *Result) RunsAndLabels() ([]*report.Run, []string) {
	var runs []*report.Run
	var labels []string
	for i, p := range r.Probes {
		if p.Run != nil {
			runs = append(runs, p.Run)
			labels = append(labels, fmt.Sprintf("%s/h %s #%d", report.FormatFloat(p.Rate, 0), p.Purpose, i+1))
		}
	}
	return runs, labels
}
