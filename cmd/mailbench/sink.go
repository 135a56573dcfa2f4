package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/lib/runtimetune"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
	"github.com/mailbench/mailbench/smtpsink"
)

type sinkCmd struct {
	Listen          string        `default:"127.0.0.1:2526" help:"Address to listen on. (default: ${default})"`
	SaveDir         string        `name:"save-dir" placeholder:"DIR" help:"Write each message to DIR (default: discard bodies)."`
	MaxMessageBytes int64         `name:"max-message-bytes" default:"33554432" help:"Largest message accepted (552 beyond). (default: ${default})"`
	MaxRecipients   int           `name:"max-recipients" default:"1000" help:"Most recipients per message (452 beyond). (default: ${default})"`
	MaxConnections  int           `name:"max-connections" default:"1000" help:"Most connections at once (421 beyond). (default: ${default})"`
	Timeout         time.Duration `default:"60s" help:"Read deadline per command line and per message's DATA as a whole (however it trickles in), write deadline per reply. (default: ${default})"`
	Every           time.Duration `name:"every" default:"10s" help:"How often to print the count line. (default: ${default})"`
	Cores           int           `default:"1" help:"Cores the sink may use (GOMAXPROCS); 0: all. One core takes more mail, with less CPU per message, than two (docs/performance.md, SMTP sink). (default: ${default})"`
	Delay           time.Duration `help:"Fault: wait this long before answering the end of DATA."`
	RejectEvery     int           `name:"reject-every" placeholder:"N" help:"Fault: answer every Nth message with 451 (554 with --reject-permanent)."`
	RejectPermanent bool          `name:"reject-permanent" help:"Fault: reject with 554 instead of 451."`
	sinkJSONFlags   `embed:""`
}

func (sinkCmd) Help() string {
	return `Runs the SMTP sink standalone: it accepts mail for any recipient, counts
messages, recipients and bytes, measures the relay delay from the
X-Mailbench-Sent header that mailbench stamps, and prints a count line
periodically. Ctrl-C stops it and prints the totals.

Examples:
  mailbench sink
  mailbench sink --listen 127.0.0.1:2526 --every 5s
  mailbench sink --delay 2s --reject-every 100    # a slow, flaky relay`
}

// maxSinkCores bounds --cores (a typo, not a machine).
const maxSinkCores = 4096

// The sink flags' bounds: a limit of 0 or below would mean "no limit" to
// the sink, which a typo must not ask for.
const (
	maxSinkMessageBytes = 1 << 40
	maxSinkRecipients   = 1_000_000
	maxSinkConnections  = 10_000_000
	minSinkEvery        = 100 * time.Millisecond
	maxSinkEvery        = 24 * time.Hour
	maxSinkTimeout      = 24 * time.Hour
	// minSinkTimeout: below it no real MTA gets a command line or a message
	// through, and the sink would only measure its own deadline.
	minSinkTimeout = 100 * time.Millisecond
)

// check range-checks the sink's flags (a usage error naming the flag and
// its limit).
func (c *sinkCmd) check() error {
	switch {
	case c.Cores < 0 || c.Cores > maxSinkCores:
		return fmt.Errorf("--cores %d: out of range: must be 0 (all) to %d", c.Cores, maxSinkCores)
	case c.MaxMessageBytes < 1 || c.MaxMessageBytes > maxSinkMessageBytes:
		return fmt.Errorf("--max-message-bytes %d: out of range: must be 1 to %d", c.MaxMessageBytes, int64(maxSinkMessageBytes))
	case c.MaxRecipients < 1 || c.MaxRecipients > maxSinkRecipients:
		return fmt.Errorf("--max-recipients %d: out of range: must be 1 to %d", c.MaxRecipients, maxSinkRecipients)
	case c.MaxConnections < 1 || c.MaxConnections > maxSinkConnections:
		return fmt.Errorf("--max-connections %d: out of range: must be 1 to %d", c.MaxConnections, maxSinkConnections)
	case c.Every < minSinkEvery || c.Every > maxSinkEvery:
		return fmt.Errorf("--every %v: out of range: must be %v to %v", c.Every, minSinkEvery, maxSinkEvery)
	case c.Timeout < minSinkTimeout || c.Timeout > maxSinkTimeout:
		return fmt.Errorf("--timeout %v: out of range: must be %v to %v", c.Timeout, minSinkTimeout, maxSinkTimeout)
	case c.RejectEvery < 0:
		return fmt.Errorf("--reject-every %d: out of range: must be 0 (never) or more", c.RejectEvery)
	case c.Delay < 0 || c.Delay > maxSinkTimeout:
		return fmt.Errorf("--delay %v: out of range: must be 0 to %v", c.Delay, maxSinkTimeout)
	}
	return checkListen("--listen", c.Listen)
}

// checkListen refuses a listen address without a host: ":2526" or "" would
// listen on every interface, which a benchmark's sink must ask for by name
// (0.0.0.0 or [::]).
func checkListen(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want HOST:PORT (e.g. 127.0.0.1:2526): %v", flag, addr, err)
	}
	if host == "" {
		return fmt.Errorf("%s %q: names no host, which would listen on every interface: name one (127.0.0.1, or 0.0.0.0 for all)", flag, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s %q: port must be 0 to 65535", flag, addr)
	}
	return nil
}

func (c *sinkCmd) Run(e *env) error {
	if err := c.check(); err != nil {
		return usage(err)
	}
	// The sink waits on the network: on one P its goroutines hand over
	// without waking a second thread, which measured 0.6-0.7x the CPU per
	// message of two Ps and more messages per second. 0: every core.
	runtimetune.FixCores(c.Cores)
	jsonOut, err := createOutput("json", c.JSON)
	if err != nil {
		return err
	}
	defer jsonOut.abandon()
	var rec *smtpsink.Record
	var onMessage func(delivery.Arrival)
	if c.JSON != "" {
		rec = smtpsink.NewRecord()
		onMessage = rec.Add
	}
	s, err := smtpsink.New(smtpsink.Options{OnMessage: onMessage,
		Addr: c.Listen, SaveDir: c.SaveDir, MaxMessageBytes: c.MaxMessageBytes,
		MaxRecipients: c.MaxRecipients, MaxConnections: c.MaxConnections,
		ReadTimeout: c.Timeout, WriteTimeout: c.Timeout,
		Faults: smtpsink.Faults{Delay: c.Delay, RejectEvery: c.RejectEvery, RejectPermanent: c.RejectPermanent},
	})
	if err != nil {
		return usage(err)
	}
	if err := s.Start(); err != nil {
		return couldNotRun(err)
	}
	fmt.Fprintf(e.stderr, "mailbench sink listening on %s (Ctrl-C to stop)\n", s.Addr())
	stop, _, release := signalContextsSaying(e.stderr, "stopping the sink: no new connections; finishing the messages in flight, then the totals (Ctrl-C again to cut it short)")
	defer release()
	go s.RunReporter(stop, e.stderr, c.Every)
	<-stop.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(ctx)
	n := s.Counts()
	h := s.RelayDelay()
	fmt.Fprintf(e.stdout, "sink totals: %d connections, %d messages, %d recipients, %d bytes, %d rejected, %d errors",
		n.Connections, n.Messages, n.Recipients, n.Bytes, n.Rejected, n.Errors)
	if h.TotalCount() > 0 {
		fmt.Fprintf(e.stdout, "; relay delay p50 %v p95 %v max %v",
			usDur(h.ValueAtQuantile(50)), usDur(h.ValueAtQuantile(95)), usDur(h.Max()))
	}
	fmt.Fprintln(e.stdout)
	if rec == nil {
		return nil
	}
	return jsonOut.write(func(w io.Writer) error { return rec.WriteJSON(w, s) })
}

func usDur(us int64) time.Duration {
	return (time.Duration(us) * time.Microsecond).Round(time.Microsecond)
}

type reportCmd struct {
	Files []string `arg:"" type:"existingfile" help:"JSON reports written by 'mailbench run --json'."`
	JSON  string   `name:"json" placeholder:"FILE" help:"Write the merged report as JSON; FILE - writes it to stdout and the text report to stderr (for jq and CI)."`
	HTML  string   `name:"html" placeholder:"FILE" help:"Write a self-contained HTML report with charts (side by side with --side-by-side)."`
	// SideBySide prints the runs as columns instead of merging them.
	SideBySide      bool   `name:"side-by-side" help:"Compare the runs (servers, releases, configurations) as columns instead of merging them."`
	Force           bool   `name:"force" help:"Merge runs of different configs or measurement windows anyway (with warnings); the same run twice is refused even so."`
	MaxRegression   string `name:"max-regression" placeholder:"LIMITS" help:"With --side-by-side: exit 1 when a later run regresses against the first beyond LIMITS and beyond the run-to-run noise, e.g. p95=10%,errors=0.1%,rate=2% (any subset; errors in percentage points)."`
	reportSinkFlags `embed:""`
}

func (reportCmd) Help() string {
	return `Renders one JSON report as the compliance table, or merges several (from
load generators that each ran a shard of the users) exactly: counts are added
and HDR histograms merged, then the table is evaluated again.

A merge refuses the same run twice (same start, seed, config and name: its
operations would count twice), and, unless --force, runs of different
configs (config file or name) or windows (different phase lengths, or
measurement windows that start more than 10% of the measurement apart).
A merge that includes a partial run is partial.

With --side-by-side the reports are not merged but compared, one column per
file (named after it): target and achieved sessions/hour, users, each
function's % compliant and p95, error rate, delivery and verdict.

Exit codes: 0 compliant (every run, side by side), 1 not compliant,
2 usage error, unreadable report or reports that are not shards of one
run, 3 the report (or a merged run) is partial: stopped before the end of
its window, it is not a valid result.

Examples:
  mailbench report result.json
  mailbench report gen1.json gen2.json --json merged.json
  mailbench report --side-by-side dovecot-2.3.json dovecot-2.4.json stalwart.json
  kubectl logs job/mailbench-manager > run.log && mailbench report run.log --html run.html`
}

func (c *reportCmd) Run(e *env) error {
	// A certification (`mailbench certify --json`) or a capacity search
	// (`mailbench size --json`) renders as its own summary.
	if len(c.Files) == 1 && !c.SideBySide && c.JSON == "" && c.HTML == "" {
		if handled, err := renderResultJSON(e.stdout, c.Files[0]); handled {
			return err
		}
	}
	var runs []*report.Run
	for _, name := range c.Files {
		data, err := readReportFile(name)
		if err != nil {
			return usage(err)
		}
		r, err := report.ReadJSON(bytes.NewReader(data))
		if err != nil {
			return usage(fmt.Errorf("%s: %w", name, err))
		}
		runs = append(runs, r)
	}
	htmlOut, err := createOutput("html", c.HTML)
	if err != nil {
		return err
	}
	defer htmlOut.abandon()
	if c.SideBySide {
		return c.sideBySide(e, runs, htmlOut)
	}
	if c.MaxRegression != "" {
		return usage(errors.New("--max-regression compares runs: it needs --side-by-side"))
	}
	jsonOut, _, err := createReportOutputs(e, c.JSON, "")
	if err != nil {
		return err
	}
	defer jsonOut.abandon()
	run, withSink, err := c.mergeWithSink(runs)
	if err != nil {
		return err
	}
	if !withSink {
		run = runs[0]
	}
	if !withSink && len(runs) > 1 {
		var err error
		if run, err = report.MergeWith(report.MergeOptions{Labels: c.Files, Force: c.Force}, runs...); err != nil {
			if errors.Is(err, report.ErrNotShards) {
				err = fmt.Errorf("%w (--force merges them anyway)", err)
			}
			return usage(err)
		}
	}
	if err := writeRun(e, run, jsonOut, htmlOut); err != nil {
		return err
	}
	return runVerdict(run, couldNotRun(errors.New("the report is partial: a run was stopped before the end of its measurement window; not a valid result")), false)
}

// sideBySide prints runs as columns labelled by their file names.
func (c *reportCmd) sideBySide(e *env, runs []*report.Run, htmlOut *outputFile) error {
	if c.JSON != "" {
		return usage(errors.New("--json writes a merged report; it cannot be combined with --side-by-side"))
	}
	if c.Force {
		return usage(errors.New("--force forces a merge; it cannot be combined with --side-by-side"))
	}
	var limits *report.RegressionLimits
	if c.MaxRegression != "" {
		l, err := report.ParseRegressionLimits(c.MaxRegression)
		if err != nil {
			return usage(fmt.Errorf("--max-regression: %w", err))
		}
		limits = &l
	}
	labels := make([]string, len(c.Files))
	for i, name := range c.Files {
		labels[i] = strings.TrimSuffix(filepath.Base(name), ".json")
	}
	out, flush := e.fit(e.stdout)
	defer flush()
	if err := render.WriteSideBySide(out, runs, labels); err != nil {
		return err
	}
	if err := htmlOut.write(htmlWriter(runs, render.HTMLOptions{Labels: labels})); err != nil {
		return err
	}
	if limits != nil {
		if regs := report.Regressions(runs, labels, *limits); len(regs) > 0 {
			fmt.Fprintf(out, "\nRegressions against %s (--max-regression %s):\n", labels[0], c.MaxRegression)
			for _, r := range regs {
				fmt.Fprintf(out, "  - %s\n", r)
			}
			return errNotCompliant
		}
		fmt.Fprintf(out, "\nNo regression against %s beyond --max-regression %s.\n", labels[0], c.MaxRegression)
	}
	for _, r := range runs {
		if !r.Valid() {
			return errNotCompliant
		}
	}
	return nil
}
