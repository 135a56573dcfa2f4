package sweep

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/mailbench/mailbench/report"
)

// WriteText renders r as one table with a column per level: target and
// achieved sessions/hour, equivalent users, late/dropped sessions, the
// worst function row's % compliant, the error rate, delivery
// lost/duplicated, each iteration's verdict and the level's. Below it: the
// capacity line, the SPEC-style rule, and a note per iteration that did not
// pass (its failing rows, or why it could not be carried out). The output is deterministic for a given r; it performs I/O
// only on w.
func (r *Result) WriteText(w io.Writer) error {
	target := "server under test"
	if r.Embedded {
		target = "embedded target"
	}
	its := "iteration"
	if r.Iterations != 1 {
		its = "iterations"
	}
	if _, err := fmt.Fprintf(w, "Load sweep: %q, 100%% = %s sessions/hour, %d %s per level (%s)\n",
		r.Name, report.FormatFloat(r.BaseRate, 0), r.Iterations, its, target); err != nil {
		return err
	}
	if r.Partial {
		fmt.Fprintf(w, "\n*** PARTIAL SWEEP: %s. Levels not run in full are not valid results. ***\n", r.PartialReason)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label string, cell func(*Level) string) {
		cells := []string{label}
		for i := range r.Levels {
			l := &r.Levels[i]
			if label != "" && label != "target sessions/hour" && label != "iterations" && !l.ran() {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, cell(l))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	line("", func(l *Level) string { return report.FormatFloat(l.Percent, decimals(l.Percent)) + "%" })
	line("target sessions/hour", func(l *Level) string { return report.FormatFloat(l.TargetPerHour, 0) })
	line("achieved sessions/hour", func(l *Level) string { return report.FormatFloat(l.AchievedPerHour, 0) })
	line("equivalent users", func(l *Level) string { return report.FormatCount(int64(math.Floor(l.EquivalentUsers))) })
	line("late / dropped sessions", func(l *Level) string {
		return report.FormatCount(l.Late) + " / " + report.FormatCount(l.Dropped)
	})
	line("worst row % compliant", func(l *Level) string {
		if l.WorstFunction == "" {
			return "-"
		}
		return floorPercent(l.WorstPercent) + "% (" + l.WorstFunction + ")"
	})
	line("error rate", func(l *Level) string { return ceilPercent(l.ErrorPercent) + "%" })
	line("delivery lost / duplicated", func(l *Level) string {
		if !l.DeliveryMeasured {
			return "-"
		}
		return report.FormatCount(l.Lost) + " / " + report.FormatCount(l.Duplicated)
	})
	line("iterations", func(l *Level) string {
		vs := make([]string, len(l.Iterations))
		for i, it := range l.Iterations {
			vs[i] = string(it.Verdict())
		}
		return strings.Join(vs, " ")
	})
	line("level verdict", func(l *Level) string { return l.Verdict() })
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if r.Iterations > 1 {
		fmt.Fprintln(w, "Achieved, users, worst row and error rate are medians over the iterations (of an even count, the")
		fmt.Fprintln(w, "mean of the two middle ones); late/dropped and delivery are sums. % compliant is rounded down,")
		fmt.Fprintln(w, "the error rate up.")
	} else {
		fmt.Fprintln(w, "% compliant is rounded down, the error rate up.")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, r.CapacityLine())
	if ok, why := r.SPECRule(); ok {
		fmt.Fprintf(w, "SPEC-style rule (%g%% and %g%% must pass in every iteration): PASS\n", RequiredLow, RequiredHigh)
	} else {
		fmt.Fprintf(w, "SPEC-style rule (%g%% and %g%% must pass in every iteration): FAIL: %s\n", RequiredLow, RequiredHigh, why)
	}
	for _, l := range r.Levels {
		for i, it := range l.Iterations {
			switch it.Verdict() {
			case Error:
				fmt.Fprintf(w, "note: level %g%% iteration %d could not be carried out: %s\n", l.Percent, i+1, it.Err)
			case Fail, Partial:
				var why []string
				if it.Run.Partial {
					why = append(why, "stopped early ("+it.Run.PartialReason+")")
				}
				if len(it.Run.Table.Failing) > 0 {
					why = append(why, "failing: "+strings.Join(it.Run.Table.Failing, ", "))
				}
				fmt.Fprintf(w, "note: level %g%% iteration %d: %s\n", l.Percent, i+1, strings.Join(why, "; "))
			}
		}
	}
	return nil
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
	return fmt.Sprintf("Capacity: the highest level compliant in every iteration: %s%% (%s sessions/hour ≡ %s users)",
		report.FormatFloat(l.Percent, decimals(l.Percent)), report.FormatFloat(l.AchievedPerHour, 0),
		report.FormatCount(int64(math.Floor(l.EquivalentUsers))))
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

// floorPercent renders p with two decimals, rounded down.
func floorPercent(p float64) string { return fmt.Sprintf("%.2f", max(0, math.Floor(p*100+1e-9)/100)) }

// ceilPercent renders p with two decimals, rounded up.
func ceilPercent(p float64) string { return fmt.Sprintf("%.2f", max(0, math.Ceil(p*100-1e-9)/100)) }
