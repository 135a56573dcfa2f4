package report

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/internal/lib/textfit"
	"github.com/mailbench/mailbench/measure"
)

// WriteText renders r as the terminal report: a header (name, config,
// target, window, a PARTIAL banner, warnings), the "Summary Results" table in
// the SPECmail2008 form with mailbench's columns (operations, errors, p50,
// p95, p99, max in milliseconds, PASS/FAIL), the "Error Rate" row, the load
// achieved, and the verdict line. Percent compliant is rounded down and the
// error rate up, so neither looks better than it is. Times are shown in UTC.
// The output is deterministic for a given r.
func WriteText(w io.Writer, r *Run) error { return WriteTextWidth(w, r, DefaultTextWidth) }

// DefaultTextWidth is the width a text report is laid out in when the
// reader's is unknown to the renderer (a file, a pipe): what a wide
// terminal or an editor shows whole. The CLI passes the terminal's width.
const DefaultTextWidth = 120

// WriteTextWidth is WriteText laid out for width columns (at least
// textfit.MinWidth): the summary table compact below fullTableWidth, every
// other line wrapped to fit (textfit.Writer).
func WriteTextWidth(w io.Writer, r *Run, width int) (err error) {
	width = max(width, textfit.MinWidth)
	fit := textfit.NewWriter(w, width)
	defer func() {
		if ferr := fit.Flush(); err == nil {
			err = ferr
		}
	}()
	w = fit
	bw := bufio.NewWriter(controlEscaper{w})
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }

	tool := strings.TrimSpace(orDash(r.Tool) + " " + r.Version)
	p("%s benchmark report\n", tool)
	kv := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	kp := func(k, format string, a ...any) { fmt.Fprintf(kv, "%s:\t"+format+"\n", append([]any{k}, a...)...) }
	kp("Run", "%s (config %s, seed %d)", orDash(r.Name), orValue(r.Config, "built-in defaults"), r.Seed)
	target := fmt.Sprintf("IMAP %s, SMTP %s", orDash(r.Target.IMAP), orDash(r.Target.SMTP))
	if r.Target.Embedded {
		target += " (embedded demo target)"
	}
	kp("Target", "%s", target)
	kp("Sink", "%s", orValue(r.Target.Sink, "none"))
	kp("Window", "%s → %s", fmtTime(r.Started), fmtTime(r.Ended))
	kp("Phases", "warm-up %v, measurement %v, ramp-down %v", r.Warmup, r.Measurement, r.Rampdown)
	if r.ServerClock != nil {
		kp("Server clock", "%s", r.ServerClock)
	}
	if r.DeliveryTiming != "" {
		kp("Delivery timing", "%s", r.DeliveryTiming)
	}
	if err := kv.Flush(); err != nil {
		return err
	}
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
	if classes := errorClasses(r.Table); classes != "" {
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

	p("\n")
	lw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	lp := func(k, format string, a ...any) { fmt.Fprintf(lw, "%s:\t"+format+"\n", append([]any{k}, a...)...) }
	lp("Target sessions/hour", "%s", fmtFloat1(r.TargetSessionsPerHour))
	if lo, hi := r.AchievedBand(); hi > 0 && !r.Partial && r.CouldNotRun == "" {
		lp("Achieved sessions/hour", "%s (the target's 95%% Poisson band over this window: %s–%s)", fmtFloat1(r.AchievedSessionsPerHour), fmtFloat0(lo), fmtFloat0(hi))
	} else {
		lp("Achieved sessions/hour", "%s", fmtFloat1(r.AchievedSessionsPerHour))
	}
	if u, ok := r.UsersFigure(); ok {
		lp("Users", "%s simulated (at %s sessions per user-hour)", fmtInt(int64(u)), trimFloat(r.SessionsPerUserHour))
	} else if r.Users > 0 {
		lp("Users", "%s mailboxes, %s sessions an hour each: not a number of users, since a user starts %s an hour (this rate is the load of %s users)",
			fmtInt(int64(r.Users)), trimFloat(math.Round(r.SessionsPerUser()*10)/10), trimFloat(r.SessionsPerUserHour),
			fmtInt(int64(math.Ceil(r.TargetSessionsPerHour/r.SessionsPerUserHour))))
	}
	if mean, lo, hi := r.ExpectedSessions(); mean > 0 && !r.Partial && r.CouldNotRun == "" { // the band is for the whole window
		lp("Sessions scheduled", "%s (Poisson expectation %s, 95%% band %s–%s)", fmtInt(r.SessionsScheduled), fmtFloat1(mean), fmtInt(lo), fmtInt(hi))
	}
	lp("Sessions", "started %s, logged in %s, completed %s, failed %s", fmtInt(r.SessionsStarted), fmtInt(r.SessionsLoggedIn),
		fmtInt(r.SessionsCompleted), fmtInt(r.SessionsFailed))
	lp("Late / dropped sessions", "%s late, %s dropped", fmtInt(r.SessionsLate), fmtInt(r.SessionsDropped))
	if parts := r.DropCounts(); len(parts) > 0 {
		lp("Dropped by cause", "%s", strings.Join(parts, "; "))
		lp("Drops attributed to", "%s", r.DropAttribution())
	}
	if in := r.Inbound; in.TargetPerHour > 0 || in.Scheduled > 0 {
		lp("Inbound mail", "scheduled %s, started %s, %s late, %s dropped (target %s/hour)", fmtInt(in.Scheduled), fmtInt(in.Started),
			fmtInt(in.Late), fmtInt(in.Dropped), fmtFloat1(in.TargetPerHour))
	}
	if len(r.SessionsByType) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.SessionsByType)) {
			parts = append(parts, k+" "+fmtInt(r.SessionsByType[k]))
		}
		lp("Sessions by type", "%s", strings.Join(parts, ", "))
	}
	if l := r.ConcurrencyLine(); l != "" {
		lp("Concurrency", "%s", l)
	} else {
		lp("Max concurrent sessions", "%s", fmtInt(int64(r.MaxConcurrentObserved)))
	}
	if r.Target.Sink != "" || r.Sink.Messages > 0 {
		lp("Sink", "%s messages, %s recipients, %s bytes",
			fmtInt(r.Sink.Messages), fmtInt(r.Sink.Recipients), fmtInt(r.Sink.Bytes))
		lp("Sink relay delay", "p50 %s ms, p95 %s ms, max %s ms",
			fmtMS(time.Duration(r.Sink.RelayDelayP50)), fmtMS(time.Duration(r.Sink.RelayDelayP95)), fmtMS(time.Duration(r.Sink.RelayDelayMax)))
		if r.Sink.Foreign > 0 {
			lp("Sink foreign mail", "%s messages not of this run, in none of the figures (%s)", fmtInt(r.Sink.Foreign), ForeignRunsText(r.Sink.ForeignRuns))
		}
	}
	if err := lw.Flush(); err != nil {
		return err
	}
	writeGenerator(bw, r.Generator)
	writeServer(bw, r.Server)

	if r.Connect != nil {
		p("\n")
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := r.Connect.WriteTextWidth(w, width); err != nil {
			return err
		}
	}

	if d := r.Delivery; d != nil {
		p("\nDelivery accounting (all phases: every message sent from warm-up to the end of ramp-down)\n")
		for _, l := range d.Lines() {
			p("  %s\n", l)
		}
		if c := r.DeliveryChecks; c != nil {
			p("  Delivery checker       %s checks, %s IMAP commands (not timed), %s errors\n",
				fmtInt(c.Checks), fmtInt(c.Commands), fmtInt(c.Errors))
			for _, e := range c.ErrorSamples {
				p("    checker error: %s\n", e)
			}
		}
	}

	if c := r.Clients; c != nil {
		p("\nConnected clients ([clients]: users staying connected in IDLE)\n")
		p("  held %s of %s at the end of the measurement window; %s connects (%s reconnects) in %s attempts\n",
			fmtInt(c.Held), fmtInt(int64(c.Target)), fmtInt(c.Connects), fmtInt(c.Reconnects), fmtInt(c.Attempts))
		p("  %s IDLE commands (renewals included), %s new-mail announcements (EXISTS)\n", fmtInt(c.Idles), fmtInt(c.Announced))
		if len(c.Drops) > 0 {
			keys := make([]string, 0, len(c.Drops))
			for k := range c.Drops {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %s", k, fmtInt(c.Drops[k])))
			}
			p("  drops: %s\n", strings.Join(parts, ", "))
		}
		if why := c.Failing(); why != "" {
			p("  NOT HELD: %s\n", why)
		}
	}

	writePopulation(bw, r.Population)

	if !r.Table.Compliant {
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
				DroppedRow, pct, compliance.FormatPercentLimit(r.MaxDroppedPercent))
		}
		if r.Delivery != nil {
			for _, f := range r.Delivery.Failing() {
				p("  - %s: %s\n", DeliveryRow, f)
			}
		}
		for _, c := range r.ServerCriteria {
			if !c.Pass {
				p("  - %s: %s\n", c.Row(), c.Reason())
			}
		}
	}
	p("\n%s\n", r.VerdictLine())
	return bw.Flush()
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
func writeSummaryTable(bw io.Writer, r *Run, width int) error {
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

func notMeasured(row compliance.Row) bool { return row.NotMeasured && row.Operations == 0 }

func rowResult(row compliance.Row) string {
	if notMeasured(row) {
		return "NOT MEASURED"
	}
	return passFail(row.Pass)
}

// writeGenerator renders the generator's health under the load figures.
func writeGenerator(w io.Writer, g *GeneratorHealth) {
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
			fmtFloat(g.CPU.Seconds(), 1), fmtFloat(g.CPUWindow.Seconds(), 1), GeneratorCPULimit)
	}
	p("  %-24s %s ms in %s cycles\n", "GC pauses", fmtMS(g.GCPause), fmtInt(g.GCCycles))
	if g.Stalls > 0 {
		p("  %-24s %s over op_timeout + margin (%v; worst %s ms, clamped)\n", "Impossible durations", fmtInt(g.Stalls), g.StallLimit, fmtMS(g.WorstStall))
	}
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
			line += fmt.Sprintf("; %s SPEC sessions/hour achieved (target %s)", fmtFloat0(r.AchievedSessionsPerHour), fmtFloat0(r.TargetSessionsPerHour))
		}
		return line
	}
	users := r.UsersCell()
	if _, ok := r.UsersFigure(); ok {
		users += " users"
	}
	return fmt.Sprintf("Result: %s: %s sessions/hour achieved (target %s) on %s", v, fmtFloat0(r.AchievedSessionsPerHour),
		fmtFloat0(r.TargetSessionsPerHour), users)
}

func Verdict(t compliance.Table) string {
	if t.Compliant {
		return "Verdict: COMPLIANT"
	}
	return "Verdict: NOT COMPLIANT (failing: " + strings.Join(t.Failing, ", ") + ")"
}

func errorClasses(t compliance.Table) string {
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
func cancelledByFunction(r *Run) string {
	fs := slices.SortedFunc(maps.Keys(r.Functions), functionOrder)
	var parts []string
	for _, f := range fs {
		if s := r.Functions[f]; s != nil && s.Cancelled > 0 {
			parts = append(parts, string(f)+" "+fmtInt(s.Cancelled))
		}
	}
	return strings.Join(parts, ", ")
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func orDash(s string) string { return orValue(s, "-") }

func orValue(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// fmtMS renders d in milliseconds with two decimals.
func fmtMS(d time.Duration) string {
	return fmtFloat(float64(d)/float64(time.Millisecond), 2)
}

func fmtFloat1(v float64) string { return fmtFloat(v, 1) }

// fmtFloat renders v with the given decimals and thousands separators.
func fmtFloat(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	out := groupThousands(intPart)
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// fmtInt renders n with thousands separators, as SPEC does ("12,019").
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + groupThousands(s[1:])
	}
	return groupThousands(s)
}

func groupThousands(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	head := len(digits) % 3
	if head > 0 {
		b.WriteString(digits[:head])
	}
	for i := head; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
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
