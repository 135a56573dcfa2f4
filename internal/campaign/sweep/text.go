package sweep

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
)

// WriteText renders r as one render.SideBySide table with a column per
// level: target and achieved sessions/hour, equivalent users, late/dropped
// sessions, the worst function row's % compliant, the error rate, delivery
// lost/duplicated, each iteration's verdict and the level's. A level none of
// whose iterations produced a report shows "-" but for its target and
// iterations. Below it: how the figures are aggregated, the capacity line,
// the SPEC-style rule, and a note per iteration that did not pass (its
// failing rows, or why it could not be carried out). The output is
// deterministic for a given r; it performs I/O only on w.
func (r *Result) WriteText(w io.Writer) error {
	target := "server under test"
	if r.Embedded {
		target = "embedded target"
	}
	its := "iteration"
	if r.Iterations != 1 {
		its = "iterations"
	}
	hundred := report.FormatFloat(r.BaseRate, 0) + " sessions/hour"
	if r.Axis == AxisConnected {
		hundred = fmt.Sprintf("%s connected clients at %s", report.FormatCount(int64(r.BaseConnected)), hundred)
	}
	if r.Axis == AxisUsers {
		hundred = report.FormatCount(int64(r.BaseUsers)) + " users of the mix"
	}
	t := &render.SideBySide{Title: []string{fmt.Sprintf("Load sweep: %q, 100%% = %s, %d %s per level (%s)",
		r.Name, hundred, r.Iterations, its, target)}}
	if r.Partial {
		t.Title = append(t.Title, "", fmt.Sprintf("*** PARTIAL SWEEP: %s. Levels not run in full are not valid results. ***", r.PartialReason))
	}
	for i := range r.Levels {
		t.Head = append(t.Head, report.FormatFloat(r.Levels[i].Percent, decimals(r.Levels[i].Percent))+"%")
	}
	// always shows cell for every level; line shows "-" for a level that
	// did not run.
	always := func(label string, cell func(*Level) string) {
		t.Add(label, func(i int) string { return cell(&r.Levels[i]) })
	}
	line := func(label string, cell func(*Level) string) {
		t.Add(label, func(i int) string {
			if !r.Levels[i].ran() {
				return "-"
			}
			return cell(&r.Levels[i])
		})
	}
	if r.Axis == AxisUsers {
		always("users of the mix", func(l *Level) string { return report.FormatCount(int64(l.PopulationUsers)) })
	}
	always("target sessions/hour", func(l *Level) string { return report.FormatFloat(l.TargetPerHour, 0) })
	line("achieved sessions/hour", func(l *Level) string { return report.FormatFloat(l.AchievedPerHour, 0) })
	if r.Axis == AxisConnected {
		always("connected clients", func(l *Level) string { return report.FormatCount(int64(l.Connected)) })
		line("held (median)", func(l *Level) string { return report.FormatFloat(l.Held, 0) })
	}
	line("users", func(l *Level) string { return l.UsersText() })
	line("late / dropped sessions", func(l *Level) string {
		return report.FormatCount(l.Late) + " / " + report.FormatCount(l.Dropped)
	})
	line("worst row % compliant", func(l *Level) string {
		if l.WorstFunction == "" {
			return "-"
		}
		return report.FloorPercent(l.WorstPercent) + "% (" + l.WorstFunction + ")"
	})
	line("error rate", func(l *Level) string { return report.CeilPercent(l.ErrorPercent) + "%" })
	line("delivery missing / duplicated", func(l *Level) string {
		if !l.DeliveryMeasured {
			return "-"
		}
		return report.FormatCount(l.Lost) + " / " + report.FormatCount(l.Duplicated)
	})
	for _, name := range r.serverFigures() {
		line("server "+name, func(l *Level) string {
			v, ok := l.serverMedian(name)
			if !ok {
				return "-"
			}
			if strings.HasSuffix(name, "_percent") {
				return report.FormatFloat(v, 0) + "%"
			}
			return report.FormatFloat(v, 2)
		})
	}
	always("iterations", func(l *Level) string {
		vs := make([]string, len(l.Iterations))
		for i, it := range l.Iterations {
			vs[i] = string(it.Verdict())
		}
		return strings.Join(vs, " ")
	})
	line("level verdict", func(l *Level) string { return l.Verdict() })

	if r.Iterations > 1 {
		t.Sections = append(t.Sections, []string{
			"Achieved, users, worst row and error rate are medians over the iterations (of an even count, the",
			"mean of the two middle ones); late/dropped and delivery are sums. % compliant is rounded down,",
			"the error rate up.",
		})
	} else {
		t.Sections = append(t.Sections, []string{"% compliant is rounded down, the error rate up."})
	}
	rule := fmt.Sprintf("SPEC-style rule (%g%% and %g%% must pass in every iteration): ", RequiredLow, RequiredHigh)
	if ok, why := r.SPECRule(); ok {
		rule += "PASS"
	} else {
		rule += "FAIL: " + why
	}
	t.Sections = append(t.Sections, []string{r.CapacityLine(), rule})
	for _, l := range r.Levels {
		for i, it := range l.Iterations {
			switch it.Verdict() {
			case Error:
				t.Notes = append(t.Notes, fmt.Sprintf("note: level %g%% iteration %d could not be carried out: %s", l.Percent, i+1, it.Err))
			case Fail, Partial:
				t.Notes = append(t.Notes, fmt.Sprintf("note: level %g%% iteration %d: %s", l.Percent, i+1, it.Run.FailureReasons("stopped early")))
			}
		}
	}
	return t.Write(w)
}

// CapacityLine is the sentence naming the sweep's capacity, e.g.
// "Capacity: the highest level compliant in every iteration: 100% (12,000
// sessions/hour ≡ 2,500 users)"; the figures are the level's medians of
// achieved sessions/hour and equivalent users.
func (r *Result) CapacityLine() string {
	l, ok := r.Capacity()
	if !ok {
		return "Capacity: no level was compliant in every iteration"
	}
	pop := "≡ " + l.UsersText() + " users"
	if !l.UsersFigure {
		pop = "on " + l.UsersText() + ", not a users figure"
	}
	if r.Axis == AxisUsers {
		return fmt.Sprintf("Capacity: the highest level compliant in every iteration: %s%% (%s users of the mix)",
			report.FormatFloat(l.Percent, decimals(l.Percent)), report.FormatCount(int64(l.PopulationUsers)))
	}
	if r.Axis == AxisConnected {
		return fmt.Sprintf("Capacity: the highest level compliant in every iteration: %s%% (%s connected clients held, with %s sessions/hour %s)",
			report.FormatFloat(l.Percent, decimals(l.Percent)), report.FormatFloat(l.Held, 0), report.FormatFloat(l.AchievedPerHour, 0), pop)
	}
	return fmt.Sprintf("Capacity: the highest level compliant in every iteration: %s%% (%s sessions/hour %s)",
		report.FormatFloat(l.Percent, decimals(l.Percent)), report.FormatFloat(l.AchievedPerHour, 0), pop)
}

// ran reports whether any iteration of l produced a report.
func (l *Level) ran() bool {
	for _, it := range l.Iterations {
		if it.Run != nil {
			return true
		}
	}
	return false
}

// decimals is 0 for a whole percentage, else 1.
func decimals(pct float64) int {
	if pct == math.Trunc(pct) {
		return 0
	}
	return 1
}

// serverFigures are the server figures ([server]) that run out first, of
// any iteration of any level: the host's CPU share, each process group's
// cores (the generator's too), the busiest disk, the memory used.
func (r *Result) serverFigures() []string {
	var out []string
	for _, l := range r.Levels {
		for _, it := range l.Iterations {
			if it.Run == nil || it.Run.Server == nil {
				continue
			}
			for _, f := range it.Run.Server.Figures {
				n := f.Name
				keep := n == "host.cpu_percent" || n == "host.disk_util_percent" || n == "host.mem_used_percent" ||
					strings.HasSuffix(n, ".cpu_cores") && n != "host.cpu_cores"
				if keep && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// serverMedian is the median over the level's iterations of a server
// figure's mean over each measurement window.
func (l *Level) serverMedian(name string) (float64, bool) {
	var vs []float64
	for _, it := range l.Iterations {
		if it.Run == nil {
			continue
		}
		if f, ok := it.Run.Server.Figure(name); ok {
			vs = append(vs, f.Mean)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}
