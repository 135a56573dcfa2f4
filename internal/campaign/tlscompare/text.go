package tlscompare

import (
	"fmt"
	"io"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
)

// WriteText renders r as one render.SideBySide table with a column per
// run and a row per measure: the TLS modes, sessions/hour achieved, each
// connect function's p50/p95 with its TCP, TLS, greeting and auth parts and
// its handshakes (resumed), TLS errors, the error rate, the worst row's %
// compliant, the verdict and the generator's CPU per session; below it the
// legend of the connect parts and the CPU figure, then the notes. A run
// that failed shows "run failed" in every row but its TLS modes. It
// performs I/O only on w.
func (r *Result) WriteText(w io.Writer) error {
	target := "server under test"
	if r.Embedded {
		target = "embedded target"
	}
	t := &render.SideBySide{
		Title: []string{fmt.Sprintf("TLS comparison: %q at %.0f sessions/hour (%s)", r.Name, r.Rate, target)},
	}
	for _, row := range r.Rows {
		t.Head = append(t.Head, row.Variant)
	}
	line := func(label string, cell func(Row) string) {
		t.Add(label, func(i int) string {
			if r.Rows[i].Err != "" {
				return "run failed"
			}
			return cell(r.Rows[i])
		})
	}
	t.Add("TLS (IMAP / SMTP)", func(i int) string { return r.Rows[i].IMAPTLS + " / " + r.Rows[i].SMTPTLS })
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
		line("  TLS handshake alone", part(func(f metrics.FunctionBreakdown) metrics.PartStats { return f.Handshake }))
		line("  first exchange after it", part(func(f metrics.FunctionBreakdown) metrics.PartStats { return f.FirstExchange }))
		line("  stalled after the handshake", func(row Row) string {
			f, ok := row.Connect.Function(fn)
			if !ok || f.StallAssessed == 0 {
				return "-"
			}
			s := fmt.Sprintf("%d of %d", f.Stalled, f.StallAssessed)
			if f.DelayedACKStall() {
				s += " (delayed ACK)"
			}
			return s
		})
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
	line("error rate", func(row Row) string { return report.CeilPercent(row.ErrorPercent) + "%" })
	line("% compliant (worst row)", func(row Row) string {
		if row.WorstFunction == "" {
			return "-"
		}
		return report.FloorPercent(row.WorstPercent) + "% (" + string(row.WorstFunction) + ")"
	})
	line("verdict", func(row Row) string {
		if row.Partial {
			return "PARTIAL"
		}
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
	t.Sections = [][]string{{
		"Connect parts: p50 / p95 over successful connects; greeting = IMAP greeting or SMTP banner + EHLO.",
		"CPU per session: user + system time of the whole mailbench process during a run (warm-up to settle,",
		"the embedded target and sink included) divided by the sessions started in the measurement window.",
	}}
	for _, row := range r.Rows {
		if row.Err != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("note: %s run failed: %s", row.Variant, row.Err))
		}
	}
	for _, row := range r.Rows {
		for _, fn := range metrics.ConnectFunctions {
			if f, ok := row.Connect.Function(fn); ok && f.DelayedACKStall() {
				n := fmt.Sprintf("note: %s, %s: %d of %d connects stalled on the first exchange after the TLS handshake "+
					"(p50 %s against %s for the clear-text STARTTLS exchange): a TCP delayed-ACK stall after the TLS handshake, not TLS computation",
					row.Variant, fn, f.Stalled, f.StallAssessed, metrics.FormatMS(f.FirstExchange.P50()), metrics.FormatMS(f.ClearExchange.P50()))
				if !row.Resumption && r.resumptionAvoidsStall(fn, f) {
					n += "; what resumption seems to save against this row is mostly the stall"
				}
				t.Notes = append(t.Notes, n+" (docs/tls.md)")
			}
		}
	}
	for _, n := range r.Notes {
		t.Notes = append(t.Notes, "note: "+n)
	}
	return t.Write(w)
}

// resumptionAvoidsStall says whether a resumption row's fn stalled in a
// clearly smaller share of its connects than f (under three quarters of
// f's share): then the time resumption seems to save is the stall it
// avoided. Against a server that stalls resumed handshakes as well (Cyrus,
// Exim) or resumes none, it does not.
func (r *Result) resumptionAvoidsStall(fn measure.Function, f metrics.FunctionBreakdown) bool {
	share := func(f metrics.FunctionBreakdown) float64 {
		if f.StallAssessed == 0 {
			return 0
		}
		return float64(f.Stalled) / float64(f.StallAssessed)
	}
	for _, row := range r.Rows {
		if !row.Resumption || row.Err != "" {
			continue
		}
		if g, ok := row.Connect.Function(fn); ok && g.StallAssessed > 0 && share(g) < 0.75*share(f) {
			return true
		}
	}
	return false
}

// RunsAndLabels returns the runs that produced a report, labelled by
// their variant, for render.WriteHTML. It doesn't perform I/O.
func (r *Result) RunsAndLabels() ([]*report.Run, []string) {
	var runs []*report.Run
	var labels []string
	for _, row := range r.Rows {
		if row.Run != nil {
			runs, labels = append(runs, row.Run), append(labels, row.Variant)
		}
	}
	return runs, labels
}

// Result is a campaign result (its command renders it like the others).
var _ campaign.Result = (*Result)(nil)
