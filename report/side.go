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

// SideBySide is the one side-by-side table of mailbench: a column per run,
// level or variant, a header cell per column, then labelled rows of cells.
// report --side-by-side, compare-tls and sweep all render through it; what
// differs between them is data: their rows, the lines above the table and
// the sections below it.
//
// Write renders, in order: Title (when any, followed by a blank line); the
// table (tabwriter, two spaces between columns, the header row with an empty
// label cell); each of Sections preceded by a blank line; then Notes, one a
// line, with no blank line before them.
type SideBySide struct {
	Title    []string
	Head     []string // one per column
	Rows     []SideRow
	Sections [][]string
	Notes    []string
}

// SideRow is one labelled row of a SideBySide: a cell per column.
type SideRow struct {
	Label string
	Cells []string
}

// Add appends the row label with cell(i) for each column i. It doesn't
// perform I/O.
func (t *SideBySide) Add(label string, cell func(col int) string) {
	cells := make([]string, len(t.Head))
	for i := range cells {
		cells[i] = cell(i)
	}
	t.Rows = append(t.Rows, SideRow{Label: label, Cells: cells})
}

// Write renders t on w; see SideBySide. It performs I/O only on w.
func (t *SideBySide) Write(w io.Writer) error {
	var b strings.Builder
	for _, l := range t.Title {
		b.WriteString(l + "\n")
	}
	if len(t.Title) > 0 {
		b.WriteString("\n")
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\t"+strings.Join(t.Head, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, r.Label+"\t"+strings.Join(r.Cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		b.WriteString(strings.TrimRight(l, " ") + "\n") // rows with empty cells end in padding
	}
	for _, sec := range t.Sections {
		b.WriteString("\n")
		for _, l := range sec {
			b.WriteString(l + "\n")
		}
	}
	for _, l := range t.Notes {
		b.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

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

// FloorPercent renders a percentage with two decimals, rounded down (a %
// compliant never shows better than it is).
func FloorPercent(p float64) string { return fmt.Sprintf("%.2f", max(0, math.Floor(p*100+1e-9)/100)) }

// CeilPercent renders a percentage with two decimals, rounded up (an error
// rate never shows better than it is).
func CeilPercent(p float64) string { return fmt.Sprintf("%.2f", max(0, math.Ceil(p*100-1e-9)/100)) }

// WriteSideBySide renders runs as columns of one table, to compare servers,
// releases or configurations: label, name, config, target and achieved
// sessions/hour, equivalent users, late/dropped sessions, then for each
// function in any run's table its % compliant and p95 (ms), the error
// rate, delivery lost/duplicated/corrupted, and the verdict (COMPLIANT,
// NOT COMPLIANT, or PARTIAL when the run was stopped early). A function a
// run has no row for shows "-". labels name the columns; nil or an empty
// label uses the run's name, else its position. % compliant is rounded down
// and the error rate up, as in WriteText. It performs I/O only on w.
// sideLabelWidth is the widest label of WriteSideBySide before a function
// name is wrapped (as the text table wraps them): the side-by-side table
// of two runs fits 120 columns.
const sideLabelWidth = 40

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

	funcs := tableFunctions(runs)

	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = orValue(r.Name, fmt.Sprintf("run %d", i+1))
		if labels != nil && labels[i] != "" {
			names[i] = labels[i]
		}
	}
	t := &SideBySide{Head: names}
	line := func(label string, cell func(*Run) string) {
		t.Add(label, func(i int) string { return cell(runs[i]) })
	}
	line("name", func(r *Run) string { return orDash(r.Name) })
	line("config", func(r *Run) string { return orValue(r.Config, "built-in defaults") })
	line("version", func(r *Run) string { return orDash(strings.TrimSpace(r.Tool + " " + r.Version)) })
	line("measurement", func(r *Run) string { return r.Measurement.String() })
	line("target sessions/hour", func(r *Run) string { return fmtFloat(r.TargetSessionsPerHour, 0) })
	base := runs[0]
	line("achieved sessions/hour", func(r *Run) string { return fmtFloat(r.AchievedSessionsPerHour, 0) + rateDelta(base, r) })
	line("users", func(r *Run) string { return r.UsersCell() })
	line("late / dropped sessions", func(r *Run) string { return r.DroppedCell() })
	for _, f := range funcs {
		// The function's name on lines of its own, so that the longest
		// SPEC names do not widen the label column past the terminal.
		name := string(f)
		if len(name) > sideLabelWidth {
			parts := wrapName(name, sideLabelWidth)
			for i, p := range parts[:len(parts)-1] {
				if i > 0 {
					p = "  " + p
				}
				line(p, func(*Run) string { return "" })
			}
			name = "  " + parts[len(parts)-1]
		}
		line(name+" % compliant", func(r *Run) string {
			row, ok := r.Table.Row(f)
			if !ok || row.Operations == 0 {
				return "-"
			}
			return compliance.FormatCompliant(row.WithinLimit, row.Operations) + "% " + passFail(row.Pass)
		})
		line("  p95 (ms)", func(r *Run) string {
			row, ok := r.Table.Row(f)
			if !ok || row.Operations == 0 {
				return "-"
			}
			return fmtMS(row.P95) + p95Delta(base, r, f)
		})
	}
	line(compliance.ErrorRateName, func(r *Run) string {
		e := r.Table.Errors
		if e.Operations == 0 {
			return "-"
		}
		return compliance.FormatErrorRate(e.Errors, e.Operations) + "% " + passFail(e.Pass) + errorDelta(base, r)
	})
	line("delivery missing / duplicated / corrupted", func(r *Run) string {
		d := r.Delivery
		if d == nil {
			return "-"
		}
		return fmtInt(d.Lost) + " / " + fmtInt(d.Duplicated) + " / " + fmtInt(d.Corrupted)
	})
	line("verdict", (*Run).Verdict)
	if len(runs) > 1 {
		t.Sections = append(t.Sections, []string{
			"Changes are against the first column; * marks a change beyond the run-to-run noise (the two runs' 95%",
			"intervals do not overlap: Poisson for the rate, a bootstrap of the HDR histogram for a p95, Wilson for errors).",
		})
	}
	if w := PhasesDiffer(runs, names); w != "" {
		t.Sections = append(t.Sections, []string{w})
	}
	// Why each failing run fails, below the table.
	for i, r := range runs {
		if why := r.FailureReasons("partial"); why != "" {
			t.Notes = append(t.Notes, names[i]+": "+why)
		}
	}
	return t.Write(w)
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

// tableFunctions returns the functions of every run's compliance table,
// each once, in table (SPEC) order.
func tableFunctions(runs []*Run) []measure.Function {
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
