package sizing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
)

// Schema and SchemaVersion identify the JSON written by WriteJSON
// (docs/size.md).
const (
	Schema        = "mailbench-size"
	SchemaVersion = 2 // 2: users per step, outcomes, mailbench's bound, the bounding row
)

// population renders the population of a capacity at rate: "≡ 2,344
// users (simulated, 4.8 sessions per user-hour)", or, with fixed users,
// "on 300 mailboxes (37.5 sessions per user-hour; fixed users: why)".
func (r *Result) population(rate float64) string {
	if r.Axis == AxisUsers {
		return "(" + r.Mix + ")"
	}
	if r.Axis == AxisConnected {
		u := 0
		for _, p := range r.Probes {
			if p.Level == rate && p.Users > 0 {
				u = p.Users
			}
		}
		return fmt.Sprintf("beside %s sessions/hour, on %s users", report.FormatFloat(r.Rate, 0), report.FormatCount(int64(u)))
	}
	if !r.FixedUsers && r.PerUserHour > 0 {
		return fmt.Sprintf("≡ %s users (simulated: every step ran rate ÷ %s users)",
			report.FormatCount(int64(r.Users(rate))), report.FormatFloat(r.PerUserHour, 1))
	}
	u := 0
	for _, p := range r.Probes {
		if p.Level == rate && p.Users > 0 {
			u = p.Users
		}
	}
	if u == 0 {
		return "(users not known)"
	}
	return fmt.Sprintf("on %s mailboxes (%s sessions per user-hour; no users figure: %s)",
		report.FormatCount(int64(u)), report.FormatFloat(rate/float64(u), 1), r.FixedUsersWhy)
}

// CapacityLine is the one-sentence result, e.g. "Capacity: 11,250
// sessions/hour ≡ 2,344 users (simulated ...) (bracket [11,250, 11,700):
// +4.0%, confirmed)". It never gives a users figure that no step
// simulated, and never calls mailbench's own bound the server's capacity.
func (r *Result) CapacityLine() string {
	if r.MailbenchBound != "" {
		at := "no step passed"
		if r.Low > 0 {
			at = fmt.Sprintf("the server carried at least %s %s", r.LevelText(r.Low), r.population(r.Low))
		}
		return "Capacity: none found for the server: the search was bounded by mailbench, not by the server (" + at + ")"
	}
	switch {
	case r.Low <= 0 && !math.IsInf(r.High, 1):
		return fmt.Sprintf("Capacity: none found: no compliant %s (the lowest that did not pass: %s)", r.Axis.noun(), r.LevelText(r.High))
	case r.Low <= 0:
		return "Capacity: none found: no run passed"
	case math.IsInf(r.High, 1):
		return fmt.Sprintf("Capacity: at least %s %s: no run failed, the upper end is not known",
			r.LevelText(r.Low), r.population(r.Low))
	}
	state := "confirmed"
	switch {
	case !r.Converged:
		state = fmt.Sprintf("NOT within the precision of %s%%", report.FormatFloat(r.Precision, 1))
	case !r.Confirmed:
		state = "NOT confirmed"
	}
	unit := "sessions/hour"
	switch r.Axis {
	case AxisConnected:
		unit = "connected clients"
	case AxisUsers:
		unit = "users"
	}
	return fmt.Sprintf("Capacity: %s %s (bracket [%s, %s) %s: +%s%%, %s)",
		r.LevelText(r.Low), r.population(r.Low),
		report.FormatFloat(r.Low, 0), report.FormatFloat(r.High, 0), unit,
		report.FormatFloat(r.BracketPercent(), 1), state)
}

// BoundingLine names the run that bounded the capacity; "" when none did.
func (r *Result) BoundingLine() string {
	if r.Bounding < 0 || r.Bounding >= len(r.Probes) {
		return ""
	}
	p := r.Probes[r.Bounding]
	who := "the server"
	switch p.Outcome {
	case MailbenchBound:
		who = "mailbench (not the server)"
	case Undecided:
		who = "too few operations to decide (not shown to be the server)"
		if len(p.Unsteady) > 0 {
			who = "the server, not steady (a p95 rising across the window)"
		}
	}
	return fmt.Sprintf("Bounded by %s: run %d at %s (%s, %d users): %s",
		who, r.Bounding+1, r.stepText(p.Level, p.Rate, p.Connected), p.Purpose, p.Users, p.Reason)
}

// RowSummary is one function's figures in one run.
type RowSummary struct {
	Function         string
	P95, Limit       time.Duration
	PercentCompliant float64
	RequiredPercent  float64
	Operations       int64
}

// BoundingRow is the server-side row that bounded the capacity: of the
// bounding run's function rows, the one furthest below its requirement
// (nil when the bound is not the server's or no row fell short).
func (r *Result) BoundingRow() *RowSummary {
	if r.Bounding < 0 || r.Bounding >= len(r.Probes) {
		return nil
	}
	p := r.Probes[r.Bounding]
	if p.Run == nil || p.Outcome == MailbenchBound {
		return nil
	}
	var best *RowSummary
	for _, row := range p.Run.Table.Rows {
		if row.Operations <= 0 {
			continue
		}
		pct := 100 * float64(row.WithinLimit) / float64(row.Operations)
		if pct > row.RequiredPercent && !p.unsteady(row.Function) {
			continue
		}
		if best == nil || pct-row.RequiredPercent < best.PercentCompliant-best.RequiredPercent {
			best = &RowSummary{Function: string(row.Function), P95: row.P95, Limit: row.Limit, PercentCompliant: pct,
				RequiredPercent: row.RequiredPercent, Operations: row.Operations}
		}
	}
	return best
}

// unsteady reports whether f is one of p's drifting functions (Unsteady
// entries are compliance.Drift strings, which begin with the function).
func (p *Probe) unsteady(f measure.Function) bool {
	for _, u := range p.Unsteady {
		if strings.HasPrefix(u, string(f)+": ") {
			return true
		}
	}
	return false
}

// curveServerFigures are the server figures of any point of the curve,
// sorted.
func curveServerFigures(curve []CurvePoint) []string {
	var out []string
	for _, c := range curve {
		for name := range c.Server {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// BoundingRowLine renders BoundingRow ("" when none).
func (r *Result) BoundingRowLine() string {
	b := r.BoundingRow()
	if b == nil {
		return ""
	}
	return fmt.Sprintf("Bounding row (the server's): %s, p95 %s ms, %s%% within %v against >%s%% required (%s operations)",
		b.Function, report.FormatMS(b.P95), report.FormatFloat(math.Floor(b.PercentCompliant*100)/100, 2), b.Limit,
		report.FormatFloat(b.RequiredPercent, 1), report.FormatCount(b.Operations))
}

// KneeLines say what was observed of the server ([server]) at the
// knee: beside the bounding run, and beside the highest run that passed
// below it, so that what rose between them shows; none without server
// figures. An observation alongside the failing row, not a proven cause.
func (r *Result) KneeLines() []string {
	if r.Bounding < 0 || r.Bounding >= len(r.Probes) {
		return nil
	}
	b := r.Probes[r.Bounding]
	if b.Run == nil || b.Run.ServerLine() == "" {
		return nil
	}
	lines := []string{fmt.Sprintf("Observed at the knee, beside the bounding run (not a proven cause): at %s: %s", r.stepText(b.Level, b.Rate, b.Connected), b.Run.ServerLine())}
	best := -1
	for i, p := range r.Probes {
		if p.Pass && p.Run != nil && p.Level < b.Level && (best < 0 || p.Level > r.Probes[best].Level) {
			best = i
		}
	}
	if best >= 0 && r.Probes[best].Run.ServerLine() != "" {
		p := r.Probes[best]
		lines = append(lines, fmt.Sprintf("  and at %s, the highest that passed: %s", r.stepText(p.Level, p.Rate, p.Connected), p.Run.ServerLine()))
	}
	return lines
}

// PrepareLine says what growing the population cost ("" when nothing was
// prepared).
func (r *Result) PrepareLine() string {
	if r.PreparedUsers == 0 && r.PreparedMessages == 0 {
		return ""
	}
	return fmt.Sprintf("Population grown as the search climbed: %s users made ready, %s messages appended, in %v",
		report.FormatCount(int64(r.PreparedUsers)), report.FormatCount(r.PreparedMessages), r.PrepareTime.Round(time.Second))
}

// WriteText renders r: the capacity, the bounding run and row, why the
// search stopped early (if it did), then the curve as one table with a
// column per run by rate: target and achieved sessions/hour, users,
// outcome, and the p95 (ms) and % compliant of every function that ran.
// It performs I/O only on w.
func (r *Result) WriteText(w io.Writer) error {
	target := "server under test"
	if r.Embedded {
		target = "embedded target"
	}
	t := &render.SideBySide{Title: []string{
		fmt.Sprintf("Sizing: %q (%s), precision %s%%, %d runs in %v", r.Name, target, report.FormatFloat(r.Precision, 1), len(r.Probes), r.Elapsed.Round(time.Second)),
	}}
	head := []string{r.CapacityLine()}
	for _, l := range append([]string{r.BoundingLine(), r.BoundingRowLine()}, append(r.KneeLines(), r.PrepareLine())...) {
		if l != "" {
			head = append(head, l)
		}
	}
	if r.Stopped != "" {
		head = append(head, "*** The search ended early: "+r.Stopped+". ***")
	}
	t.Title = append(t.Title, "")
	t.Title = append(t.Title, head...)
	t.Title = append(t.Title, "", "p95 (ms) and % compliant per function against load:")
	curve := r.Curve()
	for _, p := range curve {
		if r.Axis == AxisConnected {
			t.Head = append(t.Head, report.FormatFloat(p.Level, 0)+" clients")
		} else if r.Axis == AxisUsers {
			t.Head = append(t.Head, report.FormatFloat(p.Level, 0)+" users")
		} else {
			t.Head = append(t.Head, report.FormatFloat(p.Rate, 0)+"/h")
		}
	}
	t.Add("purpose", func(i int) string { return string(curve[i].Purpose) })
	if slices.ContainsFunc(curve, func(c CurvePoint) bool { return c.Connected > 0 }) {
		t.Add("connected clients", func(i int) string { return report.FormatCount(int64(curve[i].Connected)) })
	}
	t.Add("users", func(i int) string { return report.FormatCount(int64(curve[i].Users)) })
	t.Add("achieved sessions/hour", func(i int) string { return report.FormatFloat(curve[i].Achieved, 0) })
	t.Add("target's 95% band", func(i int) string {
		if curve[i].BandHigh <= 0 {
			return "-"
		}
		return report.FormatFloat(curve[i].BandLow, 0) + "–" + report.FormatFloat(curve[i].BandHigh, 0)
	})
	t.Add("outcome", func(i int) string { return strings.ToUpper(string(curve[i].Outcome)) })
	fns := curveFunctions(curve)
	for _, fn := range fns {
		t.Add(fn+" p95", func(i int) string {
			d, ok := curve[i].P95[fn]
			if !ok {
				return "-"
			}
			return report.FormatMS(d)
		})
	}
	for _, name := range curveServerFigures(curve) {
		t.Add("server "+name, func(i int) string {
			v, ok := curve[i].Server[name]
			if !ok {
				return "-"
			}
			if strings.HasSuffix(name, "_percent") {
				return report.FormatFloat(v, 0) + "%"
			}
			return report.FormatFloat(v, 2)
		})
	}
	for _, fn := range fns {
		t.Add(fn+" %", func(i int) string {
			c, ok := curve[i].Compliant[fn]
			if !ok {
				return "-"
			}
			return report.FormatFloat(math.Floor(c*100)/100, 2)
		})
	}
	t.Sections = append(t.Sections, []string{
		"Every run has its own schedule seed and rate ÷ sessions_per_user_hour users (docs/size.md). A run passes when",
		"every row passes with 95% confidence (Wilson interval), no mail is missing, no session is dropped and the generator",
		"keeps up; too few operations to decide make it UNDECIDED (lengthened first). The true limit lies in the",
		"bracket [highest passing, lowest not passing).",
	})
	for i, p := range r.Probes {
		switch {
		case p.Err != "":
			t.Notes = append(t.Notes, fmt.Sprintf("note: run %d (%s) could not be carried out: %s", i+1, r.stepText(p.Level, p.Rate, p.Connected), p.Err))
		case !p.Pass:
			t.Notes = append(t.Notes, fmt.Sprintf("note: run %d (%s, %s, %s): %s", i+1, r.stepText(p.Level, p.Rate, p.Connected), p.Purpose, p.Outcome, p.Reason))
		}
		if p.Prepared != nil {
			t.Notes = append(t.Notes, fmt.Sprintf("note: before run %d the population grew by %d users, %d messages appended, in %v",
				i+1, p.Prepared.Users, p.Prepared.Messages, p.Prepared.Elapsed.Round(time.Millisecond)))
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
	campaign.Envelope
	// Axis and Rate are absent in results before the connected axis
	// (which read as the rate axis).
	Axis        Axis            `json:"axis,omitempty"`
	Rate        float64         `json:"rate_per_hour,omitempty"` // every step's rate, axis connected
	Mix         string          `json:"mix,omitempty"`           // [population]'s mix by share, axis users
	PerUserHour float64         `json:"sessions_per_user_hour"`
	Precision   float64         `json:"precision_percent"`
	BudgetS     float64         `json:"budget_s"`
	Start       float64         `json:"start_per_hour"`
	Capacity    jsonCapacity    `json:"capacity"`
	Stopped     string          `json:"stopped"`
	FixedUsers  bool            `json:"fixed_users"`
	FixedWhy    string          `json:"fixed_users_why,omitempty"`
	Mailbench   string          `json:"mailbench_bound,omitempty"`
	BoundingRow *jsonRowSummary `json:"bounding_row"`
	// Knee is what was observed of the server at the knee (KneeLines).
	Knee     []string         `json:"knee_server,omitempty"`
	Prepared jsonPrepared     `json:"prepared"`
	Bounding *int             `json:"bounding_run"` // 0-based index into runs; null: none
	ElapsedS float64          `json:"elapsed_s"`
	Runs     []jsonProbe      `json:"runs"`
	Curve    []jsonCurvePoint `json:"curve"`
}

type jsonCapacity struct {
	Found          bool     `json:"found"`
	Converged      bool     `json:"converged"`
	Confirmed      bool     `json:"confirmed"`
	SessionsPerH   float64  `json:"sessions_per_hour"`   // the bracket's low end (axis rate), or the steps' rate (axis connected)
	Connected      float64  `json:"connected,omitempty"` // the bracket's low end, axis connected
	Users          float64  `json:"users"`               // simulated in the step at sessions_per_hour; 0 with fixed users
	BracketLow     float64  `json:"bracket_low"`
	BracketHigh    *float64 `json:"bracket_high"`    // null: no run failed
	BracketPercent *float64 `json:"bracket_percent"` // null: no bracket
}

type jsonProbe struct {
	Rate           float64         `json:"rate"`
	Level          float64         `json:"level,omitempty"` // on the axis: absent = rate
	Connected      int             `json:"connected,omitempty"`
	Seed           int64           `json:"seed"`
	Purpose        Purpose         `json:"purpose"`
	Pass           bool            `json:"pass"`
	Reason         string          `json:"reason,omitempty"`
	GeneratorBound bool            `json:"generator_bound"`
	Error          string          `json:"error,omitempty"`
	Outcome        Outcome         `json:"outcome"`
	Users          int             `json:"users"`
	Cap            int             `json:"max_concurrent_sessions"`
	MeasurementS   float64         `json:"measurement_s"`
	Undecided      []string        `json:"undecided,omitempty"`
	Unsteady       []string        `json:"unsteady,omitempty"`
	Prepared       *jsonPrepared   `json:"prepared,omitempty"`
	Report         json.RawMessage `json:"report"` // report.WriteJSON form; null when none
}

type jsonCurvePoint struct {
	Rate      float64          `json:"rate"`
	Level     float64          `json:"level,omitempty"`
	Connected int              `json:"connected,omitempty"`
	Achieved  float64          `json:"achieved_per_hour"`
	Pass      bool             `json:"pass"`
	Purpose   Purpose          `json:"purpose"`
	P95US     map[string]int64 `json:"p95_us"`
	// Server are the step's server figures (CurvePoint.Server).
	Server map[string]float64 `json:"server,omitempty"`
	// The fields below are absent in schema version 1.
	Users     int                `json:"users"`
	Outcome   Outcome            `json:"outcome"`
	BandLow   float64            `json:"band_low_per_hour"`
	BandHigh  float64            `json:"band_high_per_hour"`
	Compliant map[string]float64 `json:"percent_compliant"`
}

type jsonPrepared struct {
	Users    int     `json:"users"`
	Messages int64   `json:"messages"`
	ElapsedS float64 `json:"elapsed_s"`
}

type jsonRowSummary struct {
	Function         string  `json:"function"`
	P95US            int64   `json:"p95_us"`
	LimitUS          int64   `json:"limit_us"`
	PercentCompliant float64 `json:"percent_compliant"`
	RequiredPercent  float64 `json:"required_percent"`
	Operations       int64   `json:"operations"`
}

// WriteJSON writes r as one JSON document (docs/size.md): the capacity and
// its bracket, every run with its whole report (report.WriteJSON form) and
// the curve. It performs I/O only on w.
func (r *Result) WriteJSON(w io.Writer) error {
	j := jsonResult{
		Envelope:    campaign.Envelope{Schema: Schema, SchemaVersion: SchemaVersion, Name: r.Name, Config: r.Config, Embedded: r.Embedded},
		Axis:        r.Axis,
		PerUserHour: r.PerUserHour, Precision: r.Precision, BudgetS: r.Budget.Seconds(), Start: r.Start,
		Stopped: r.Stopped, ElapsedS: r.Elapsed.Seconds(), Runs: []jsonProbe{}, Curve: []jsonCurvePoint{},
		FixedUsers: r.FixedUsers, FixedWhy: r.FixedUsersWhy, Mailbench: r.MailbenchBound, Knee: r.KneeLines(),
		Prepared: jsonPrepared{Users: r.PreparedUsers, Messages: r.PreparedMessages, ElapsedS: r.PrepareTime.Seconds()},
		Capacity: jsonCapacity{Found: r.Found(), Converged: r.Converged, Confirmed: r.Confirmed,
			SessionsPerH: r.Low, Users: r.Users(r.Low), BracketLow: r.Low},
	}
	if r.Axis == AxisUsers {
		j.Mix = r.Mix
		j.Capacity.SessionsPerH = 0
		if p := r.LowProbe(); p != nil {
			j.Capacity.SessionsPerH = p.Rate
		}
	}
	if r.Axis == AxisConnected {
		j.Rate = r.Rate
		j.Capacity.SessionsPerH, j.Capacity.Connected = r.Rate, r.Low
		if p := r.LowProbe(); p != nil {
			j.Capacity.Users = float64(p.Users)
		}
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
	if b := r.BoundingRow(); b != nil {
		j.BoundingRow = &jsonRowSummary{Function: b.Function, P95US: b.P95.Microseconds(), LimitUS: b.Limit.Microseconds(),
			PercentCompliant: b.PercentCompliant, RequiredPercent: b.RequiredPercent, Operations: b.Operations}
	}
	for _, p := range r.Probes {
		jp := jsonProbe{Rate: p.Rate, Level: p.Level, Connected: p.Connected, Seed: p.Seed, Purpose: p.Purpose, Pass: p.Pass, Reason: p.Reason,
			GeneratorBound: p.GeneratorBound, Error: p.Err, Outcome: p.Outcome, Users: p.Users, Cap: p.Cap,
			MeasurementS: p.Measurement.Seconds(), Undecided: p.Undecided, Unsteady: p.Unsteady}
		if p.Prepared != nil {
			jp.Prepared = &jsonPrepared{Users: p.Prepared.Users, Messages: p.Prepared.Messages, ElapsedS: p.Prepared.Elapsed.Seconds()}
		}
		var err error
		if jp.Report, err = report.EmbeddedJSON(p.Run); err != nil {
			return err
		}
		j.Runs = append(j.Runs, jp)
	}
	for _, c := range r.Curve() {
		jc := jsonCurvePoint{Rate: c.Rate, Level: c.Level, Connected: c.Connected, Achieved: c.Achieved, Pass: c.Pass, Purpose: c.Purpose, P95US: map[string]int64{},
			Users: c.Users, Outcome: c.Outcome, BandLow: c.BandLow, BandHigh: c.BandHigh, Compliant: c.Compliant, Server: c.Server}
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
	if j.SchemaVersion != 1 { // version 1 reads as 2 with the newer fields absent
		if err := report.CheckSchema("size result", j.Schema, j.SchemaVersion, Schema, SchemaVersion); err != nil {
			return nil, err
		}
	} else if j.Schema != Schema {
		return nil, report.CheckSchema("size result", j.Schema, j.SchemaVersion, Schema, SchemaVersion)
	}
	r := &Result{
		Name: j.Name, Config: j.Config, Embedded: j.Embedded, Axis: j.Axis, Rate: j.Rate, PerUserHour: j.PerUserHour, Precision: j.Precision,
		Budget: time.Duration(j.BudgetS * float64(time.Second)), Start: j.Start, Low: j.Capacity.BracketLow, High: math.Inf(1),
		Converged: j.Capacity.Converged, Confirmed: j.Capacity.Confirmed, Stopped: j.Stopped, Bounding: -1,
		Elapsed:    time.Duration(j.ElapsedS * float64(time.Second)),
		FixedUsers: j.FixedUsers, FixedUsersWhy: j.FixedWhy, MailbenchBound: j.Mailbench, Mix: j.Mix,
		PreparedUsers: j.Prepared.Users, PreparedMessages: j.Prepared.Messages, PrepareTime: time.Duration(j.Prepared.ElapsedS * float64(time.Second)),
	}
	switch r.Axis {
	case "":
		r.Axis = AxisRate
	case AxisRate, AxisConnected, AxisUsers:
	default:
		return nil, fmt.Errorf("read size result: axis %q: want %q, %q or %q", j.Axis, AxisRate, AxisConnected, AxisUsers)
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
		p := Probe{Rate: jp.Rate, Level: jp.Level, Connected: jp.Connected, Seed: jp.Seed, Purpose: jp.Purpose, Pass: jp.Pass, Reason: jp.Reason, GeneratorBound: jp.GeneratorBound, Err: jp.Error,
			Outcome: jp.Outcome, Users: jp.Users, Cap: jp.Cap, Measurement: time.Duration(jp.MeasurementS * float64(time.Second)), Undecided: jp.Undecided, Unsteady: jp.Unsteady}
		if p.Level == 0 { // before the axes: the level is the rate
			p.Level = p.Rate
		}
		if p.Outcome == "" { // schema version 1
			p.Outcome = Fail
			if p.Pass {
				p.Outcome = Pass
			}
		}
		if jp.Prepared != nil {
			p.Prepared = &Prepared{Users: jp.Prepared.Users, Messages: jp.Prepared.Messages, Elapsed: time.Duration(jp.Prepared.ElapsedS * float64(time.Second))}
		}
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
// each ("11,250/h bisect #3"), for render.WriteHTML.
func (r *Result) RunsAndLabels() ([]*report.Run, []string) {
	var runs []*report.Run
	var labels []string
	for i, p := range r.Probes {
		if p.Run != nil {
			runs = append(runs, p.Run)
			level := report.FormatFloat(p.Rate, 0) + "/h"
			if r.Axis == AxisConnected {
				level = report.FormatFloat(p.Level, 0) + " clients"
			} else if r.Axis == AxisUsers {
				level = report.FormatFloat(p.Level, 0) + " users"
			}
			labels = append(labels, fmt.Sprintf("%s %s #%d", level, p.Purpose, i+1))
		}
	}
	return runs, labels
}

// Result is a campaign result (its command renders it like the others).
var _ campaign.Result = (*Result)(nil)
