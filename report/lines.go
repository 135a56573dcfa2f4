package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
)

// VerdictLine is the report's last line. A run that is no result for the
// server says so instead of a verdict ("Verdict: NONE, GENERATOR-BOUND
// (…)"); otherwise Verdict(r.Table), followed by a note when the config
// could not run every SPEC function.
func (r *Run) VerdictLine() string {
	switch {
	case r.CouldNotRun != "":
		return "Verdict: NONE, COULD NOT RUN (" + r.CouldNotRun + ")"
	case r.Partial:
		return "Verdict: NONE, no verdict (partial: " + orValue(r.PartialReason, "stopped early") + ")"
	case len(r.GeneratorBound()) > 0:
		return "Verdict: NONE, GENERATOR-BOUND (" + joinReasons(r.GeneratorBound()) + "): not a result for the server"
	}
	v := Verdict(r.Table)
	if nm := r.Table.NotMeasured; len(nm) > 0 {
		v += "; not a full SPEC-style run (not measured: " + strings.Join(nm, ", ") + ")"
	}
	return v
}

// Verdict is the report's last line: "Verdict: COMPLIANT" or
// "Verdict: NOT COMPLIANT (failing: X, Y)".
// Headline is the result in one line, for the top of the report: the
// verdict in a word, the achieved rate against the target and the users,
// e.g. "Result: COMPLIANT: 14,130 sessions/hour achieved (target 14,400) on
// 50 mailboxes (288/user-hour)". The verdict line at the bottom gives the
// reasons.
func (r *Run) Headline() string {
	v := "COMPLIANT"
	switch {
	case r.CouldNotRun != "":
		v = "NONE (could not run)"
	case r.Partial:
		v = "NONE (partial)"
	case len(r.GeneratorBound()) > 0:
		v = "NONE (GENERATOR-BOUND)"
	case !r.Table.Compliant:
		v = "NOT COMPLIANT"
	}
	if p := r.Population; p != nil && len(p.Groups) > 0 {
		// A population is said in its users, by group; SPEC's sessions
		// only when it has spec users.
		var n int
		var groups []string
		for _, g := range p.Groups {
			n += g.Users
			groups = append(groups, fmtInt(int64(g.Users))+" "+g.Name)
		}
		line := fmt.Sprintf("Result: %s: %s users of the mix (%s)", v, fmtInt(int64(n)), strings.Join(groups, ", "))
		if r.TargetSessionsPerHour > 0 {
			line += fmt.Sprintf("; %s SPEC sessions/hour achieved (target %s)", FormatWhole(r.AchievedSessionsPerHour), FormatWhole(r.TargetSessionsPerHour))
		}
		return line
	}
	users := r.UsersCell()
	if _, ok := r.UsersFigure(); ok {
		users += " users"
	}
	return fmt.Sprintf("Result: %s: %s sessions/hour achieved (target %s) on %s", v, FormatWhole(r.AchievedSessionsPerHour),
		FormatWhole(r.TargetSessionsPerHour), users)
}

func Verdict(t compliance.Table) string {
	if t.Compliant {
		return "Verdict: COMPLIANT"
	}
	return "Verdict: NOT COMPLIANT (failing: " + strings.Join(t.Failing, ", ") + ")"
}

func ErrorClasses(t compliance.Table) string {
	sum := make(map[string]int64)
	for _, row := range t.Rows {
		for k, v := range row.ErrorsByClass {
			sum[string(k)] += v
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sum)) {
		parts = append(parts, k+" "+fmtInt(sum[k]))
	}
	return strings.Join(parts, ", ")
}

// WorstRow is the function row of r's compliance table with the lowest %
// compliant among the rows that ran (Operations > 0); ties go to the first
// in table order. ok is false when no row ran. It doesn't perform I/O.
func (r *Run) WorstRow() (row compliance.Row, ok bool) {
	for _, x := range r.Table.Rows {
		if x.Operations > 0 && (!ok || x.PercentCompliant < row.PercentCompliant) {
			row, ok = x, true
		}
	}
	return row, ok
}

// Valid reports whether r is a complete, compliant result: its table is
// compliant and the run was not stopped early.
func (r *Run) Valid() bool { return r.Table.Compliant && !r.Partial }

// Verdict is a run's verdict as the side-by-side tables show it: PARTIAL
// when it was stopped early, else COMPLIANT or NOT COMPLIANT.
func (r *Run) Verdict() string {
	switch {
	case r.Partial:
		return "PARTIAL"
	case r.Table.Compliant:
		return "COMPLIANT"
	default:
		return "NOT COMPLIANT"
	}
}

// FailureReasons says why r is not a valid result: "partial (reason)"
// and/or "failing: rows", joined by "; " with stopped as the word for a
// partial run ("partial", "stopped early"). It is "" for a valid run.
func (r *Run) FailureReasons(stopped string) string {
	var why []string
	if r.Partial {
		why = append(why, stopped+" ("+orValue(r.PartialReason, "stopped early")+")")
	}
	if len(r.Table.Failing) > 0 {
		why = append(why, "failing: "+strings.Join(r.Table.Failing, ", "))
	}
	return strings.Join(why, "; ")
}

// PhasesDiffer says, when the runs' phases (warm-up, measurement,
// ramp-down) are not all the same, which differ from the first's: their
// figures then come from windows of other lengths and at other distances
// from a cold start, and a difference between them may be that. "" when
// they are alike.
func PhasesDiffer(runs []*Run, names []string) string {
	if len(runs) < 2 {
		return ""
	}
	phases := func(r *Run) string {
		return fmt.Sprintf("warm-up %v, measurement %v, ramp-down %v", r.Warmup, r.Measurement, r.Rampdown)
	}
	var odd []string
	for i, r := range runs[1:] {
		if phases(r) != phases(runs[0]) {
			odd = append(odd, names[i+1]+" ("+phases(r)+")")
		}
	}
	if len(odd) == 0 {
		return ""
	}
	return fmt.Sprintf("WARNING: the runs' phases differ: %s against %s (%s). Their figures come from windows of other lengths; "+
		"a difference between them may be that, not the server.", strings.Join(odd, ", "), names[0], phases(runs[0]))
}

// TableFunctions returns the functions of every run's compliance table,
// each once, in table (SPEC) order.
func TableFunctions(runs []*Run) []measure.Function {
	var funcs []measure.Function
	seen := make(map[measure.Function]bool)
	for _, r := range runs {
		for _, row := range r.Table.Rows {
			if !seen[row.Function] {
				seen[row.Function] = true
				funcs = append(funcs, row.Function)
			}
		}
	}
	return funcs
}
