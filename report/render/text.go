// Package render draws a report.Run: WriteText for the terminal (the
// SPECmail2008 "Summary Results" table plus mailbench's columns),
// WriteHTML for a self-contained page with charts (one run, or several
// compared), and WriteSideBySide and SideBySide for the tables that put
// runs next to each other. It reads the model only; every figure it
// prints is the model's, spelt by report.FormatCount and its siblings.
// Nothing here performs I/O except on the io.Writer it is given.
package render

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/internal/lib/textfit"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

// WriteText renders r as the terminal report: a header (name, config,
// target, window, a PARTIAL banner, warnings), the "Summary Results" table in
// the SPECmail2008 form with mailbench's columns (operations, errors, p50,
// p95, p99, max in milliseconds, PASS/FAIL), the "Error Rate" row, the load
// achieved, and the verdict line. Percent compliant is rounded down and the
// error rate up, so neither looks better than it is. Times are shown in UTC.
// The output is deterministic for a given r.
func WriteText(w io.Writer, r *report.Run) error { return WriteTextWidth(w, r, DefaultTextWidth) }

// DefaultTextWidth is the width a text report is laid out in when the
// reader's is unknown to the renderer (a file, a pipe): what a wide
// terminal or an editor shows whole. The CLI passes the terminal's width.
const DefaultTextWidth = 120

// WriteTextWidth is WriteText laid out for width columns (at least
// textfit.MinWidth): the summary table compact below fullTableWidth, every
// other line wrapped to fit (textfit.Writer).
func WriteTextWidth(w io.Writer, r *report.Run, width int) (err error) {
	width = max(width, textfit.MinWidth)
	fit := textfit.NewWriter(w, width)
	defer func() {
		if ferr := fit.Flush(); err == nil {
			err = ferr
		}
	}()
	bw := bufio.NewWriter(controlEscaper{fit})
	fmt.Fprintf(bw, "%s benchmark report\n", strings.TrimSpace(orDash(r.Tool)+" "+r.Version))
	for _, section := range textSections {
		if err := section(bw, fit, r, width); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// textSections are the parts of a text report, in order. Each writes to
// bw; one that writes past the buffer (the connect breakdown, laid out by
// its own renderer) flushes bw first and writes to w.
var textSections = []func(bw *bufio.Writer, w io.Writer, r *report.Run, width int) error{
	func(bw *bufio.Writer, _ io.Writer, r *report.Run, _ int) error { return writeRows(bw, headerRows(r)) },
	writeBanners,
	writeResults,
	func(bw *bufio.Writer, _ io.Writer, r *report.Run, _ int) error {
		fmt.Fprint(bw, "\n")
		return writeRows(bw, loadRows(r))
	},
	func(bw *bufio.Writer, _ io.Writer, r *report.Run, _ int) error {
		writeGenerator(bw, r.Generator)
		writeServer(bw, r.Server)
		return nil
	},
	func(bw *bufio.Writer, w io.Writer, r *report.Run, width int) error {
		if r.Connect == nil {
			return nil
		}
		fmt.Fprint(bw, "\n")
		if err := bw.Flush(); err != nil {
			return err
		}
		return r.Connect.WriteTextWidth(w, width)
	},
	func(bw *bufio.Writer, _ io.Writer, r *report.Run, _ int) error {
		writeDelivery(bw, r)
		writeClients(bw, r.Clients)
		writePopulation(bw, r.Population)
		writeFailing(bw, r)
		fmt.Fprintf(bw, "\n%s\n", r.VerdictLine())
		return nil
	},
}

// textRow is one "Key: value" line of a text report's aligned blocks.
type textRow struct{ key, value string }

// writeRows writes rows aligned on their values.
func writeRows(w io.Writer, rows []textRow) error {
	kv := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		fmt.Fprintf(kv, "%s:\t%s\n", row.key, row.value)
	}
	return kv.Flush()
}

// headerRows say what ran: the run, the target, the sink, the window.
func headerRows(r *report.Run) []textRow {
	target := fmt.Sprintf("IMAP %s, SMTP %s", orDash(r.Target.IMAP), orDash(r.Target.SMTP))
	if r.Target.Embedded {
		target += " (embedded demo target)"
	}
	rows := []textRow{
		{"Run", fmt.Sprintf("%s (config %s, seed %d)", orDash(r.Name), orValue(r.Config, "built-in defaults"), r.Seed)},
		{"Target", target},
		{"Sink", orValue(r.Target.Sink, "none")},
		{"Window", report.FormatTime(r.Started) + " → " + report.FormatTime(r.Ended)},
		{"Phases", fmt.Sprintf("warm-up %v, measurement %v, ramp-down %v", r.Warmup, r.Measurement, r.Rampdown)},
	}
	if r.ServerClock != nil {
		rows = append(rows, textRow{"Server clock", r.ServerClock.String()})
	}
	if r.DeliveryTiming != "" {
		rows = append(rows, textRow{"Delivery timing", r.DeliveryTiming})
	}
	return rows
}

// writeBanners writes the headline and what makes the figures no result
// (could not run, generator-bound, partial), the drifts and the warnings.
func writeBanners(bw *bufio.Writer, _ io.Writer, r *report.Run, _ int) error {
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("\n%s\n", r.Headline())
	if r.CouldNotRun != "" {
		p("\n*** COULD NOT RUN: %s. The run was abandoned; there is no result. ***\n", r.CouldNotRun)
	}
	if why := r.GeneratorBound(); len(why) > 0 {
		p("\n*** GENERATOR-BOUND: the load generator, not the server, was the bottleneck (%s). These figures are not a result for the server. ***\n", joinReasons(why))
	}
	if r.Partial {
		p("\n*** PARTIAL RUN: %s. The measurement window did not complete; this is not a valid result. ***\n",
			orValue(r.PartialReason, "stopped early"))
	}
	if ds := r.Drifts(); len(ds) > 0 {
		p("\nNot steady: a p95 rose across the measurement window, so a backlog may be building that a longer measurement would show (docs/size.md, \"Steady state\"):\n")
		for _, d := range ds {
			p("  - %s\n", d)
		}
	}
	if len(r.Warnings) > 0 {
		p("\nWarnings:\n")
		for _, w := range r.Warnings {
			p("  - %s\n", w)
		}
	}
	return nil
}

// writeResults writes the summary table with its notes, and the timeline.
func writeResults(bw *bufio.Writer, _ io.Writer, r *report.Run, width int) error {
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("\nSummary Results\n")
	if err := writeSummaryTable(bw, r, width); err != nil {
		return err
	}
	if len(r.ServerCriteria) > 0 {
		p("Server criteria (mailbench's own rows, not SPEC's; [server] criteria):\n")
		for _, c := range r.ServerCriteria {
			p("  %-40s %s  %s\n", c.Row(), passFail(c.Pass), c.Reason())
		}
	}
	if classes := report.ErrorClasses(r.Table); classes != "" {
		p("Errors by class: %s\n", classes)
	}
	if cut := cancelledByFunction(r); cut != "" {
		p("Cancelled by mailbench (not server errors, not in the table): %s\n", cut)
	}
	for _, row := range r.Table.Rows {
		if row.Function == measure.DeliveryLocal && row.Operations > 0 {
			p("Delivery Time (local): SMTP acceptance to the server's announcement (IDLE EXISTS, ms) for watched INBOXes, " +
				"else to INTERNALDATE + 0.5 s (IMAP dates have 1 s resolution: ±0.5 s). See the delivery accounting below.\n")
			if row.P50 < time.Millisecond {
				p("Delivery Time (local) p50 %s ms: at least half of these messages were visible by the time the server's 250 reached "+
					"mailbench (a server that delivers before it answers, like the embedded target, or an INTERNALDATE whose 1 s resolution "+
					"puts the arrival before the acceptance): their times are clamped at 0.\n", fmtMS(row.P50))
			}
		}
	}
	writeTimeline(bw, r.Timeline, width)
	return nil
}

// loadRows are the load the run offered and what became of it: rates,
// users, sessions, drops and their cause, inbound mail, concurrency, the
// sink.
func loadRows(r *report.Run) []textRow {
	var rows []textRow
	add := func(k, format string, a ...any) { rows = append(rows, textRow{k, fmt.Sprintf(format, a...)}) }
	add("Target sessions/hour", "%s", fmtFloat1(r.TargetSessionsPerHour))
	if lo, hi := r.AchievedBand(); hi > 0 && !r.Partial && r.CouldNotRun == "" {
		add("Achieved sessions/hour", "%s (the target's 95%% Poisson band over this window: %s–%s)", fmtFloat1(r.AchievedSessionsPerHour), report.FormatWhole(lo), report.FormatWhole(hi))
	} else {
		add("Achieved sessions/hour", "%s", fmtFloat1(r.AchievedSessionsPerHour))
	}
	if u, ok := r.UsersFigure(); ok {
		add("Users", "%s simulated (at %s sessions per user-hour)", fmtInt(int64(u)), trimFloat(r.SessionsPerUserHour))
	} else if r.Users > 0 {
		add("Users", "%s mailboxes, %s sessions an hour each: not a number of users, since a user starts %s an hour (this rate is the load of %s users)",
			fmtInt(int64(r.Users)), trimFloat(math.Round(r.SessionsPerUser()*10)/10), trimFloat(r.SessionsPerUserHour),
			fmtInt(int64(math.Ceil(r.TargetSessionsPerHour/r.SessionsPerUserHour))))
	}
	if mean, lo, hi := r.ExpectedSessions(); mean > 0 && !r.Partial && r.CouldNotRun == "" { // the band is for the whole window
		add("Sessions scheduled", "%s (Poisson expectation %s, 95%% band %s–%s)", fmtInt(r.SessionsScheduled), fmtFloat1(mean), fmtInt(lo), fmtInt(hi))
	}
	add("Sessions", "started %s, logged in %s, completed %s, failed %s", fmtInt(r.SessionsStarted), fmtInt(r.SessionsLoggedIn),
		fmtInt(r.SessionsCompleted), fmtInt(r.SessionsFailed))
	add("Late / dropped sessions", "%s late, %s dropped", fmtInt(r.SessionsLate), fmtInt(r.SessionsDropped))
	if parts := r.DropCounts(); len(parts) > 0 {
		add("Dropped by cause", "%s", strings.Join(parts, "; "))
		add("Drops attributed to", "%s", r.DropAttribution())
	}
	if in := r.Inbound; in.TargetPerHour > 0 || in.Scheduled > 0 {
		add("Inbound mail", "scheduled %s, started %s, %s late, %s dropped (target %s/hour)", fmtInt(in.Scheduled), fmtInt(in.Started),
			fmtInt(in.Late), fmtInt(in.Dropped), fmtFloat1(in.TargetPerHour))
	}
	if se := r.Sends; se != nil {
		add("Sent mail", "scheduled %s, started %s, %s late, %s dropped (target %s/hour)", fmtInt(se.Scheduled), fmtInt(se.Started),
			fmtInt(se.Late), fmtInt(se.Dropped), fmtFloat1(se.TargetPerHour))
	}
	for _, st := range r.MailStreams() {
		if l := r.StreamDropLine(st); l != "" {
			add("Mail dropped", "%s", l)
		}
	}
	if len(r.SessionsByType) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.SessionsByType)) {
			parts = append(parts, k+" "+fmtInt(r.SessionsByType[k]))
		}
		add("Sessions by type", "%s", strings.Join(parts, ", "))
	}
	if l := r.ConcurrencyLine(); l != "" {
		add("Concurrency", "%s", l)
	} else {
		add("Max concurrent sessions", "%s", fmtInt(int64(r.MaxConcurrentObserved)))
	}
	if r.Target.Sink != "" || r.Sink.Messages > 0 {
		add("Sink", "%s messages, %s recipients, %s bytes",
			fmtInt(r.Sink.Messages), fmtInt(r.Sink.Recipients), fmtInt(r.Sink.Bytes))
		add("Sink relay delay", "p50 %s ms, p95 %s ms, max %s ms",
			fmtMS(time.Duration(r.Sink.RelayDelayP50)), fmtMS(time.Duration(r.Sink.RelayDelayP95)), fmtMS(time.Duration(r.Sink.RelayDelayMax)))
		if r.Sink.Foreign > 0 {
			add("Sink foreign mail", "%s messages not of this run, in none of the figures (%s)", fmtInt(r.Sink.Foreign), report.ForeignRunsText(r.Sink.ForeignRuns))
		}
	}
	return rows
}

// writeDelivery writes the delivery accounting and its checker.
func writeDelivery(bw *bufio.Writer, r *report.Run) {
	d := r.Delivery
	if d == nil {
		return
	}
	fmt.Fprintf(bw, "\nDelivery accounting (all phases: every message sent from warm-up to the end of ramp-down)\n")
	for _, l := range d.Lines() {
		fmt.Fprintf(bw, "  %s\n", l)
	}
	if c := r.DeliveryChecks; c != nil {
		fmt.Fprintf(bw, "  Delivery checker       %s checks, %s IMAP commands (not timed), %s errors\n",
			fmtInt(c.Checks), fmtInt(c.Commands), fmtInt(c.Errors))
		for _, e := range c.ErrorSamples {
			fmt.Fprintf(bw, "    checker error: %s\n", e)
		}
	}
}

// writeClients writes the connected clients of [clients].
func writeClients(bw *bufio.Writer, c *report.ClientsSummary) {
	if c == nil {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("\nConnected clients ([clients]: users staying connected in IDLE)\n")
	p("  held %s of %s at the end of the measurement window; %s connects (%s reconnects) in %s attempts\n",
		fmtInt(c.Held), fmtInt(int64(c.Target)), fmtInt(c.Connects), fmtInt(c.Reconnects), fmtInt(c.Attempts))
	p("  %s IDLE commands (renewals included), %s new-mail announcements (EXISTS)\n", fmtInt(c.Idles), fmtInt(c.Announced))
	if len(c.Drops) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(c.Drops)) {
			parts = append(parts, fmt.Sprintf("%s %s", k, fmtInt(c.Drops[k])))
		}
		p("  drops: %s\n", strings.Join(parts, ", "))
	}
	if why := c.Failing(); why != "" {
		p("  NOT HELD: %s\n", why)
	}
}

// writeFailing lists why a run that is not compliant is not.
func writeFailing(bw *bufio.Writer, r *report.Run) {
	if r.Table.Compliant {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	if r.Partial {
		// A partial run has no verdict: rows that merely had no
		// operations yet are not failures of the server.
		p("\nFailing so far (a partial run: no verdict; rows without operations left out):\n")
	} else {
		p("\nFailing:\n")
	}
	for _, row := range r.Table.Rows {
		if !row.Pass && !notMeasured(row) && !(r.Partial && row.Operations == 0) {
			p("  - %s: %s\n", row.Function, row.Reason)
		}
	}
	if e := r.Table.Errors; !e.Pass {
		p("  - %s: %s\n", compliance.ErrorRateName, e.Reason)
	}
	if pct, ok := r.DroppedPercent(); ok && r.MaxDroppedPercent > 0 && pct >= r.MaxDroppedPercent {
		p("  - %s: %.2f%% of the sessions due could not start (must stay below %s%%): the load offered was below the target\n",
			report.DroppedRow, pct, compliance.FormatPercentLimit(r.MaxDroppedPercent))
	}
	for _, why := range r.StreamFailingReasons() {
		p("  - %s\n", why)
	}
	if r.Delivery != nil {
		for _, f := range r.Delivery.Failing() {
			p("  - %s: %s\n", report.DeliveryRow, f)
		}
	}
	for _, c := range r.ServerCriteria {
		if !c.Pass {
			p("  - %s: %s\n", c.Row(), c.Reason())
		}
	}
}

// fullTableWidth is the width of the summary table with every column
// and its full heads; narrower, the compact table is drawn.
const fullTableWidth = 113

// compactNameWidth is where the compact table wraps function names.
const compactNameWidth = 18

// compactTailWidth is the narrowest width at which the compact table
// shows p99 and Max.
const compactTailWidth = 100

// writeSummaryTable draws the compliance table in width columns. From
// fullTableWidth on, SPEC's form with mailbench's columns; narrower, a
// compact form: the limit and the required share in one column (or once
// above the table, when every row has the same), short heads, names
// wrapped narrower, and p99 and Max left out below compactTailWidth (said
// under it).
func writeSummaryTable(bw io.Writer, r *report.Run, width int) error {
	tw := tabwriter.NewWriter(&trimWriter{w: bw}, 0, 0, 2, ' ', 0)
	e := r.Table.Errors
	erate := "-"
	if e.Operations > 0 {
		erate = compliance.FormatErrorRate(e.Errors, e.Operations) + "%"
	}
	if width >= fullTableWidth {
		// Two header lines and function names wrapped at '_' keep the table
		// within 120 columns; the JSON report has the names on one line.
		fmt.Fprintln(tw, "Function\tLimit\tRequired\t%\tOperations\tErrors\tp50\tp95\tp99\tMax\tResult")
		fmt.Fprintln(tw, "\t(s)\tcompliant\tcompliant\t\t\t(ms)\t(ms)\t(ms)\t(ms)\t")
		for _, row := range r.Table.Rows {
			name := wrapName(string(row.Function), maxNameWidth)
			pct, p50, p95, p99, mx := rowFigures(row)
			fmt.Fprintf(tw, "%s\t%s\t>%s%%\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				name[0], compliance.FormatLimitSeconds(row.Limit), compliance.FormatPercentLimit(row.RequiredPercent),
				pct, fmtInt(row.Operations), fmtInt(row.Errors), p50, p95, p99, mx, rowResult(row))
			for _, more := range name[1:] {
				fmt.Fprintf(tw, "  %s\t\t\t\t\t\t\t\t\t\t\n", more)
			}
		}
		fmt.Fprintf(tw, "%s\tNA\t<%s%%\t%s\t%s\t%s\t\t\t\t\t%s\n", compliance.ErrorRateName,
			compliance.FormatPercentLimit(e.MaxPercent), erate, fmtInt(e.Operations), fmtInt(e.Errors), passFail(e.Pass))
		return tw.Flush()
	}
	shared := len(r.Table.Rows) > 0
	for _, row := range r.Table.Rows {
		first := r.Table.Rows[0]
		shared = shared && row.Limit == first.Limit && row.RequiredPercent == first.RequiredPercent
	}
	withTail := width >= compactTailWidth
	if shared {
		first := r.Table.Rows[0]
		fmt.Fprintf(bw, "Every function: at most %s s for more than %s%% of its operations.\n",
			compliance.FormatLimitSeconds(first.Limit), compliance.FormatPercentLimit(first.RequiredPercent))
	}
	head := []string{"Function"}
	if !shared {
		head = append(head, "Limit")
	}
	head = append(head, "Within", "Ops", "Errors", "p50 ms", "p95 ms")
	if withTail {
		head = append(head, "p99 ms", "Max ms")
	}
	head = append(head, "Result")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.Table.Rows {
		name := wrapName(string(row.Function), compactNameWidth)
		pct, p50, p95, p99, mx := rowFigures(row)
		cells := []string{name[0]}
		if !shared {
			cells = append(cells, compliance.FormatLimitSeconds(row.Limit)+"s >"+compliance.FormatPercentLimit(row.RequiredPercent)+"%")
		}
		cells = append(cells, pct, fmtInt(row.Operations), fmtInt(row.Errors), p50, p95)
		if withTail {
			cells = append(cells, p99, mx)
		}
		cells = append(cells, rowResult(row))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		for _, more := range name[1:] {
			fmt.Fprintln(tw, "  "+more+strings.Repeat("\t", len(cells)-1))
		}
	}
	cells := []string{compliance.ErrorRateName}
	if !shared {
		cells = append(cells, "<"+compliance.FormatPercentLimit(e.MaxPercent)+"%")
	}
	cells = append(cells, erate, fmtInt(e.Operations), fmtInt(e.Errors), "", "")
	if withTail {
		cells = append(cells, "", "")
	}
	cells = append(cells, passFail(e.Pass))
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
	if err := tw.Flush(); err != nil {
		return err
	}
	if shared {
		fmt.Fprintf(bw, "The error rate must stay below %s%%.\n", compliance.FormatPercentLimit(e.MaxPercent))
	}
	if !withTail {
		fmt.Fprintf(bw, "p99 and max: in the JSON report, and in this table at %d columns or more.\n", compactTailWidth)
	}
	return nil
}

// rowFigures are a row's percent within its limit and its percentiles
// as the table shows them; "-" without operations.
func rowFigures(row compliance.Row) (pct, p50, p95, p99, mx string) {
	pct, p50, p95, p99, mx = "-", "-", "-", "-", "-"
	if row.Operations > 0 {
		pct = compliance.FormatCompliant(row.WithinLimit, row.Operations) + "%"
		p50, p95, p99, mx = fmtMS(row.P50), fmtMS(row.P95), fmtMS(row.P99), fmtMS(row.Max)
	}
	return
}

func notMeasured(row compliance.Row) bool { return row.NotMeasured && row.Operations == 0 }

func rowResult(row compliance.Row) string {
	if notMeasured(row) {
		return "NOT MEASURED"
	}
	return passFail(row.Pass)
}

// writeGenerator renders the generator's health under the load figures.
func writeGenerator(w io.Writer, g *report.GeneratorHealth) {
	if g == nil {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\nGenerator (mailbench itself, measurement window)\n")
	for _, l := range []struct {
		name string
		h    *hdrhistogram.Histogram
	}{{"Session start lateness", g.SessionLateness}, {"Inbound start lateness", g.InboundLateness}} {
		if l.h == nil || l.h.TotalCount() == 0 {
			continue
		}
		q := func(v float64) string { return fmtMS(time.Duration(l.h.ValueAtQuantile(v)) * time.Microsecond) }
		p("  %-24s p50 %s ms, p99 %s ms, max %s ms over %s starts (tolerance %v)\n", l.name, q(50), q(99),
			fmtMS(time.Duration(l.h.Max())*time.Microsecond), fmtInt(l.h.TotalCount()), g.LateTolerance)
	}
	if g.CPUKnown {
		p("  %-24s %.1f%% of %d cores (%s s CPU over %s s; bound above %.0f%%)\n", "CPU", g.CPUPercent(), g.Cores,
			fmtFloat(g.CPU.Seconds(), 1), fmtFloat(g.CPUWindow.Seconds(), 1), report.GeneratorCPULimit)
	}
	p("  %-24s %s ms in %s cycles\n", "GC pauses", fmtMS(g.GCPause), fmtInt(g.GCCycles))
	if g.Stalls > 0 {
		p("  %-24s %s over op_timeout + margin (%v; worst %s ms, clamped)\n", "Impossible durations", fmtInt(g.Stalls), g.StallLimit, fmtMS(g.WorstStall))
	}
}

// maxNameWidth is the widest function name of the text table; longer
// names are wrapped.
const maxNameWidth = 24

// wrapName splits a function name into lines of at most width characters,
// after an underscore or a space where it can (continuation lines are
// indented by two).
func wrapName(name string, width int) []string {
	var lines []string
	cont := width - 2
	for len(name) > width {
		cut := strings.LastIndexAny(name[:width], "_ ") + 1
		if cut <= 0 {
			cut = width
		}
		lines = append(lines, name[:cut])
		name = name[cut:]
		width = cont
	}
	return append(lines, name)
}

// cancelledByFunction lists the operations mailbench cut, per function in
// table order: "IMAP Connect 3, SMTP Data 1"; "" when none.
func cancelledByFunction(r *report.Run) string {
	fs := slices.SortedFunc(maps.Keys(r.Functions), report.FunctionOrder)
	var parts []string
	for _, f := range fs {
		if s := r.Functions[f]; s != nil && s.Cancelled > 0 {
			parts = append(parts, string(f)+" "+fmtInt(s.Cancelled))
		}
	}
	return strings.Join(parts, ", ")
}

// trimWriter drops the spaces at the end of every line written through it:
// tabwriter pads empty trailing cells (the wrapped function names'
// continuation lines), and a terminal report has no use for them.
type trimWriter struct {
	w      io.Writer
	spaces int // spaces held back until a non-space shows they are inside a line
}

func (t *trimWriter) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			for ; t.spaces > 0; t.spaces-- {
				out = append(out, ' ')
			}
		}
		out = append(out, c)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// controlEscaper writes what the text report renders with its ASCII control
// bytes other than tab and line feed (ESC, BEL, CR, ...) written as \xNN:
// a report read back from a file, or a server's words in it, cannot drive
// the terminal. Byte by byte, so that a multi-byte character split between
// two writes passes whole.
type controlEscaper struct{ w io.Writer }

func (c controlEscaper) Write(p []byte) (int, error) {
	clean := true
	for _, b := range p {
		if (b < 0x20 && b != '\t' && b != '\n') || b == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return c.w.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	for _, b := range p {
		if (b < 0x20 && b != '\t' && b != '\n') || b == 0x7f {
			out = append(out, fmt.Sprintf("\\x%02x", b)...)
			continue
		}
		out = append(out, b)
	}
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writePopulation renders the population section of the text report.
func writePopulation(w2 io.Writer, p *report.PopulationSummary) {
	w := w2
	if p == nil || len(p.Groups) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPopulation ([population]; planned: derived from the profiles; the rest counted over the run)\n")
	for _, g := range p.Groups {
		if g.PlannedSessionsPerHour > 0 || g.Client == "" {
			fmt.Fprintf(w, "  %s: %s users, SPEC's sessions (planned %s/hour)\n", g.Name, fmtInt(int64(g.Users)), fmtPlanned(g.PlannedSessionsPerHour))
			continue
		}
		fmt.Fprintf(w, "  %s: %s users; connections held %s at the end of the window (planned %s on average)\n",
			g.Name, fmtInt(int64(g.Users)), fmtInt(g.Held), fmtPlanned(g.PlannedConnections))
		fmt.Fprintf(w, "    planned %s received/h from outside, %s sent/h; %s logins in %s attempts, %s resyncs, %s new messages fetched, %s opened, %s deleted or moved\n",
			fmtPlanned(g.PlannedReceivedPerHour), fmtPlanned(g.PlannedSentPerHour), fmtInt(g.Connects), fmtInt(g.Attempts),
			fmtInt(g.Resyncs), fmtInt(g.NewMail), fmtInt(g.Opened), fmtInt(g.Removed))
		if w := g.Window; w != nil && w.Seconds > 0 {
			h := w.Seconds / 3600
			fmt.Fprintf(w2, "    measured in the window: %s logins/h, %s resyncs/h, %s new messages/h, %s opened/h, %s deleted or moved/h\n",
				fmtPlanned(float64(w.Connects)/h), fmtPlanned(float64(w.Resyncs)/h), fmtPlanned(float64(w.NewMail)/h), fmtPlanned(float64(w.Opened)/h), fmtPlanned(float64(w.Removed)/h))
		}
		if g.Forgotten > 0 {
			fmt.Fprintf(w, "    %s actions forgotten: users fell more than 256 messages behind (the server answered too slowly for them)\n", fmtInt(g.Forgotten))
		}
	}
}

func fmtPlanned(f float64) string {
	if f >= 100 {
		return fmtInt(int64(f + 0.5))
	}
	return fmt.Sprintf("%.1f", f)
}

// writeServer writes the "Server" section: per source, each figure's mean
// and peak over the measurement window, and the sources that failed.
func writeServer(w io.Writer, s *metrics.ServerReport) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nServer (observed beside the run every %s; mean / peak over the measurement window; not a proven cause)\n",
		trimFloat(s.IntervalSeconds)+" s")
	var order []string
	bySource := map[string][]string{}
	for _, f := range s.Figures {
		src, fig, _ := strings.Cut(f.Name, ".")
		if fig == "" {
			fig = src
		}
		if _, ok := bySource[src]; !ok {
			order = append(order, src)
		}
		bySource[src] = append(bySource[src], fig+" "+report.FormatServerValue(f.Unit, f.Mean)+" / "+report.FormatServerValue(f.Unit, f.Peak)+report.UnitSuffix(f.Unit))
	}
	col := 11
	for _, src := range s.Sources {
		col = max(col, len(src.Name))
	}
	for _, src := range order {
		note := ""
		if src == "mailbench" {
			note = " (the generator itself, on the same host)"
		}
		fmt.Fprintf(w, "  %-*s %s%s\n", col, src, strings.Join(bySource[src], ", "), note)
	}
	for _, src := range s.Sources {
		if src.Failures > 0 {
			fmt.Fprintf(w, "  %-*s %d of %d samples failed (last: %s)\n", col, src.Name, src.Failures, src.Samples, src.LastError)
		}
	}
	if s.Dropped > 0 {
		fmt.Fprintf(w, "  %d samples beyond the first %d are not in the timeline\n", s.Dropped, metrics.MaxServerPoints)
	}
}

// writeTimeline writes the "Over time" section: one line per point, or per
// group of adjacent points when there are more than 20 (counts and sessions
// summed; p95 the largest of the group's). Its operations are the protocol
// operations; delivery times, when there are any, have columns of their
// own, and so do the connected clients (the fewest held of the target,
// and the connections lost). Below timelineWideWidth the length and
// operations columns are left out (ops/s carries the rate) and the
// columns are narrower.
func writeTimeline(w io.Writer, tl []metrics.Point, width int) {
	if len(tl) == 0 {
		return
	}
	dlv := slices.ContainsFunc(tl, func(p metrics.Point) bool { return p.Delivery.Operations > 0 })
	clients := slices.ContainsFunc(tl, func(p metrics.Point) bool { return p.Clients != nil })
	group := (len(tl) + maxTextIntervals - 1) / maxTextIntervals
	fmt.Fprintf(w, "\nOver time (%s intervals; protocol operations, by start time", tl[0].Length)
	if dlv {
		fmt.Fprintf(w, "; delivery times apart")
	}
	if group > 1 {
		fmt.Fprintf(w, "; %d intervals a line, p95 the largest of them", group)
	}
	fmt.Fprintf(w, ")\n")
	wide := width >= timelineWideWidth
	if wide {
		fmt.Fprintf(w, "%-9s %9s %12s %9s %9s %12s", "from", "length", "operations", "ops/s", "errors", "p95 ms")
	} else {
		fmt.Fprintf(w, "%-8s %9s %7s %9s", "from", "ops/s", "errors", "p95 ms")
	}
	if dlv {
		if wide {
			fmt.Fprintf(w, " %11s %15s", "deliveries", "delivery p95 ms")
		} else {
			fmt.Fprintf(w, " %10s %11s", "deliveries", "dlv p95 ms")
		}
	}
	if clients {
		if wide {
			fmt.Fprintf(w, " %15s %8s", "clients held", "lost")
		} else {
			fmt.Fprintf(w, " %13s %6s", "clients held", "lost")
		}
	}
	fmt.Fprintln(w)
	t0 := tl[0].Start
	for c := range slices.Chunk(tl, group) {
		var g metrics.Point
		g.Start = c[0].Start
		var cl *metrics.ClientPoint // the group's: the fewest held, the drops summed
		for _, p := range c {
			if p.Clients != nil {
				if cl == nil {
					cl = &metrics.ClientPoint{Held: p.Clients.Held}
				}
				cl.Target, cl.Held, cl.Drops = max(cl.Target, p.Clients.Target), min(cl.Held, p.Clients.Held), cl.Drops+p.Clients.Drops
			}
			g.Length += p.Length
			g.Operations += p.Operations
			g.Errors += p.Errors
			g.P95 = max(g.P95, p.P95)
			g.Delivery.Operations += p.Delivery.Operations
			g.Delivery.P95 = max(g.Delivery.P95, p.Delivery.P95)
		}
		rate := 0.0
		if g.Length > 0 {
			rate = float64(g.Operations) / g.Length.Seconds()
		}
		if wide {
			fmt.Fprintf(w, "%-9s %9s %12s %9s %9s %12s", "+"+fmtOffset(g.Start.Sub(t0)), fmtOffset(g.Length),
				fmtInt(g.Operations), fmtFloat1(rate), fmtInt(g.Errors), fmtMS(g.P95))
		} else {
			fmt.Fprintf(w, "%-8s %9s %7s %9s", "+"+fmtOffset(g.Start.Sub(t0)), fmtFloat1(rate), fmtInt(g.Errors), fmtMS(g.P95))
		}
		if dlv {
			p95 := "-"
			if g.Delivery.Operations > 0 {
				p95 = fmtMS(g.Delivery.P95)
			}
			if wide {
				fmt.Fprintf(w, " %11s %15s", fmtInt(g.Delivery.Operations), p95)
			} else {
				fmt.Fprintf(w, " %10s %11s", fmtInt(g.Delivery.Operations), p95)
			}
		}
		if clients {
			held, lost := "-", "-"
			if cl != nil {
				held, lost = fmtInt(cl.Held)+"/"+fmtInt(cl.Target), fmtInt(cl.Drops)
			}
			if wide {
				fmt.Fprintf(w, " %15s %8s", held, lost)
			} else {
				fmt.Fprintf(w, " %13s %6s", held, lost)
			}
		}
		fmt.Fprintln(w)
	}
}

// fmtOffset formats a duration as h:mm:ss or m:ss.
func fmtOffset(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// timelineWideWidth is the narrowest width the "Over time" table is
// drawn whole in.
const timelineWideWidth = 100

// maxTextIntervals bounds the lines of the text report's "Over time" section.
const maxTextIntervals = 20
