package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// WriteText renders r as one table with a column per run and a line per
// measure, followed by the notes. It performs I/O only on w.
func (r *Result) WriteText(w io.Writer) error {
	target := "server under test"
	if r.Embedded {
		target = "embedded target"
	}
	if _, err := fmt.Fprintf(w, "TLS comparison: %q at %.0f sessions/hour (%s)\n\n", r.Name, r.Rate, target); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label string, cell func(Row) string) {
		cells := []string{label}
		for _, row := range r.Rows {
			if row.Err != "" && label != "" && label != "TLS (IMAP / SMTP)" {
				cells = append(cells, "run failed")
				continue
			}
			cells = append(cells, cell(row))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	line("", func(row Row) string { return row.Variant })
	line("TLS (IMAP / SMTP)", func(row Row) string { return row.IMAPTLS + " / " + row.SMTPTLS })
	line("sessions/hour achieved", func(row Row) string { return fmt.Sprintf("%.0f", row.SessionsPerHour) })
	for _, fn := range metrics.ConnectFunctions {
		cr := func(row Row) ConnectRow {
			if fn == measure.IMAPConnect {
				return row.IMAPConnect
			}
			return row.SMTPConnect
		}
		line(string(fn)+" p50 / p95", func(row Row) string {
			c := cr(row)
			if c.Operations == 0 {
				return "-"
			}
			return metrics.FormatMS(c.P50) + " / " + metrics.FormatMS(c.P95)
		})
		part := func(get func(metrics.FunctionBreakdown) metrics.PartStats) func(Row) string {
			return func(row Row) string {
				f, ok := row.Connect.Function(fn)
				if !ok {
					return "-"
				}
				return metrics.FormatPart(get(f))
			}
		}
		line("  TCP", part(func(f metrics.FunctionBreakdown) metrics.PartStats { return f.TCP }))
		line("  TLS", part(func(f metrics.FunctionBreakdown) metrics.PartStats { return f.TLS }))
		line("  greeting", part(func(f metrics.FunctionBreakdown) metrics.PartStats { return f.Greeting }))
		line("  auth", part(func(f metrics.FunctionBreakdown) metrics.PartStats { return f.Auth }))
		line("  handshakes (resumed)", func(row Row) string {
			f, ok := row.Connect.Function(fn)
			if !ok {
				return "-"
			}
			pct, ok := f.ResumedPercent()
			if !ok {
				return "0"
			}
			return fmt.Sprintf("%d (%.1f%%)", f.Handshakes, pct)
		})
	}
	line("TLS errors", func(row Row) string { return fmt.Sprint(row.TLSErrors) })
	line("error rate", func(row Row) string { return fmt.Sprintf("%.2f%%", row.ErrorPercent) })
	line("% compliant (worst row)", func(row Row) string {
		if row.WorstFunction == "" {
			return "-"
		}
		return fmt.Sprintf("%.2f%% (%s)", row.WorstPercent, row.WorstFunction)
	})
	line("verdict", func(row Row) string {
		if row.Compliant {
			return "COMPLIANT"
		}
		return "NOT COMPLIANT"
	})
	line("generator CPU per session", func(row Row) string {
		if row.SessionsStarted == 0 {
			return "-"
		}
		return metrics.FormatMS(row.CPUPerSession)
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Connect parts: p50 / p95 over successful connects; greeting = IMAP greeting or SMTP banner + EHLO.")
	fmt.Fprintln(w, "CPU per session: user + system time of the whole mailbench process during a run (warm-up to settle,")
	fmt.Fprint(w, "the embedded target and sink included) divided by the sessions started in the measurement window.\n")
	for _, row := range r.Rows {
		if row.Err != "" {
			fmt.Fprintf(w, "note: %s run failed: %s\n", row.Variant, row.Err)
		}
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}
