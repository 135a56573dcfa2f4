package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
)

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

// FormatCount renders n with thousands separators, as SPEC does ("12,019").
func FormatCount(n int64) string { return fmtInt(n) }

// FormatFloat renders v with the given decimals and thousands separators
// ("12,019.5").
func FormatFloat(v float64, decimals int) string { return fmtFloat(v, decimals) }

// FormatMS renders d in milliseconds with two decimals ("12.50").
func FormatMS(d time.Duration) string { return fmtMS(d) }

// WriteSideBySide renders runs as columns of one table, to compare servers,
// releases or configurations: label, name, config, target and achieved
// sessions/hour, equivalent users, late/dropped sessions, then for each
// function in any run's table its % compliant and p95 (ms), the error
// rate, delivery lost/duplicated/corrupted, and the verdict (COMPLIANT,
// NOT COMPLIANT, or PARTIAL when the run was stopped early). A function a
// run has no row for shows "-". labels name the columns; nil or an empty
// label uses the run's name, else its position. % compliant is rounded down
// and the error rate up, as in WriteText. It performs I/O only on w.
func WriteSideBySide(w io.Writer, runs []*Run, labels []string) error {
	if len(runs) == 0 {
		return errors.New("side by side: no runs")
	}
	if labels != nil && len(labels) != len(runs) {
		return fmt.Errorf("side by side: %d labels for %d runs", len(labels), len(runs))
	}
	for i, r := range runs {
		if r == nil {
			return fmt.Errorf("side by side: run %d is nil", i)
		}
	}

	// The functions of every run's table, in table (SPEC) order.
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
	rowOf := func(r *Run, f measure.Function) (compliance.Row, bool) {
		for _, row := range r.Table.Rows {
			if row.Function == f {
				return row, true
			}
		}
		return compliance.Row{}, false
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label string, cell func(*Run) string) {
		cells := []string{label}
		for _, r := range runs {
			cells = append(cells, cell(r))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = orValue(r.Name, fmt.Sprintf("run %d", i+1))
		if labels != nil && labels[i] != "" {
			names[i] = labels[i]
		}
	}
	fmt.Fprintln(tw, "\t"+strings.Join(names, "\t"))
	line("name", func(r *Run) string { return orDash(r.Name) })
	line("config", func(r *Run) string { return orValue(r.Config, "built-in defaults") })
	line("version", func(r *Run) string { return orDash(strings.TrimSpace(r.Tool + " " + r.Version)) })
	line("measurement", func(r *Run) string { return r.Measurement.String() })
	line("target sessions/hour", func(r *Run) string { return fmtFloat(r.TargetSessionsPerHour, 0) })
	line("achieved sessions/hour", func(r *Run) string { return fmtFloat(r.AchievedSessionsPerHour, 0) })
	line("equivalent users", func(r *Run) string { return fmtInt(int64(math.Floor(r.EquivalentUsers))) })
	line("late / dropped sessions", func(r *Run) string {
		return fmtInt(r.SessionsLate) + " / " + fmtInt(r.SessionsDropped)
	})
	for _, f := range funcs {
		line(string(f)+" % compliant", func(r *Run) string {
			row, ok := rowOf(r, f)
			if !ok || row.Operations == 0 {
				return "-"
			}
			return compliance.FormatCompliant(row.WithinLimit, row.Operations) + "% " + passFail(row.Pass)
		})
		line("  p95 (ms)", func(r *Run) string {
			row, ok := rowOf(r, f)
			if !ok || row.Operations == 0 {
				return "-"
			}
			return fmtMS(row.P95)
		})
	}
	line(compliance.ErrorRateName, func(r *Run) string {
		e := r.Table.Errors
		if e.Operations == 0 {
			return "-"
		}
		return compliance.FormatErrorRate(e.Errors, e.Operations) + "% " + passFail(e.Pass)
	})
	line("delivery lost / duplicated / corrupted", func(r *Run) string {
		d := r.Delivery
		if d == nil {
			return "-"
		}
		return fmtInt(d.Lost) + " / " + fmtInt(d.Duplicated) + " / " + fmtInt(d.Corrupted)
	})
	line("verdict", func(r *Run) string {
		switch {
		case r.Partial:
			return "PARTIAL"
		case r.Table.Compliant:
			return "COMPLIANT"
		default:
			return "NOT COMPLIANT"
		}
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	// Why each failing run fails, below the table.
	for i, r := range runs {
		if r.Table.Compliant && !r.Partial {
			continue
		}
		var why []string
		if r.Partial {
			why = append(why, "partial ("+orValue(r.PartialReason, "stopped early")+")")
		}
		if len(r.Table.Failing) > 0 {
			why = append(why, "failing: "+strings.Join(r.Table.Failing, ", "))
		}
		if _, err := fmt.Fprintf(w, "%s: %s\n", names[i], strings.Join(why, "; ")); err != nil {
			return err
		}
	}
	return nil
}
