package render

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/report"
)

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

func WriteSideBySide(w io.Writer, runs []*report.Run, labels []string) error {
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

	funcs := report.TableFunctions(runs)

	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = orValue(r.Name, fmt.Sprintf("run %d", i+1))
		if labels != nil && labels[i] != "" {
			names[i] = labels[i]
		}
	}
	t := &SideBySide{Head: names}
	line := func(label string, cell func(*report.Run) string) {
		t.Add(label, func(i int) string { return cell(runs[i]) })
	}
	line("name", func(r *report.Run) string { return orDash(r.Name) })
	line("config", func(r *report.Run) string { return orValue(r.Config, "built-in defaults") })
	line("version", func(r *report.Run) string { return orDash(strings.TrimSpace(r.Tool + " " + r.Version)) })
	line("measurement", func(r *report.Run) string { return r.Measurement.String() })
	line("target sessions/hour", func(r *report.Run) string { return fmtFloat(r.TargetSessionsPerHour, 0) })
	base := runs[0]
	line("achieved sessions/hour", func(r *report.Run) string { return fmtFloat(r.AchievedSessionsPerHour, 0) + report.RateDelta(base, r) })
	line("users", func(r *report.Run) string { return r.UsersCell() })
	line("late / dropped sessions", func(r *report.Run) string { return r.DroppedCell() })
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
				line(p, func(*report.Run) string { return "" })
			}
			name = "  " + parts[len(parts)-1]
		}
		line(name+" % compliant", func(r *report.Run) string {
			row, ok := r.Table.Row(f)
			if !ok || row.Operations == 0 {
				return "-"
			}
			return compliance.FormatCompliant(row.WithinLimit, row.Operations) + "% " + passFail(row.Pass)
		})
		line("  p95 (ms)", func(r *report.Run) string {
			row, ok := r.Table.Row(f)
			if !ok || row.Operations == 0 {
				return "-"
			}
			return fmtMS(row.P95) + report.P95Delta(base, r, f)
		})
	}
	line(compliance.ErrorRateName, func(r *report.Run) string {
		e := r.Table.Errors
		if e.Operations == 0 {
			return "-"
		}
		return compliance.FormatErrorRate(e.Errors, e.Operations) + "% " + passFail(e.Pass) + report.ErrorDelta(base, r)
	})
	line("delivery missing / duplicated / corrupted", func(r *report.Run) string {
		d := r.Delivery
		if d == nil {
			return "-"
		}
		return fmtInt(d.Lost) + " / " + fmtInt(d.Duplicated) + " / " + fmtInt(d.Corrupted)
	})
	line("verdict", (*report.Run).Verdict)
	if len(runs) > 1 {
		t.Sections = append(t.Sections, []string{
			"Changes are against the first column; * marks a change beyond the run-to-run noise (the two runs' 95%",
			"intervals do not overlap: Poisson for the rate, a bootstrap of the HDR histogram for a p95, Wilson for errors).",
		})
	}
	if w := report.PhasesDiffer(runs, names); w != "" {
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
