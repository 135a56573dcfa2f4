package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/lib/atomicfile"
	"github.com/mailbench/mailbench/internal/lib/host"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/workload"
)

type runCmd struct {
	Config             string        `arg:"" optional:"" help:"Workload file, or the name of a shipped config (default: quick, against the embedded target)."`
	JSON               string        `name:"json" placeholder:"FILE" help:"Also write the report as JSON (schema: docs/report-schema.md); FILE - writes it to stdout and the text report to stderr (for jq and CI)."`
	HTML               string        `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with charts (docs/html-report.md)."`
	Results            string        `name:"results" placeholder:"FILE" help:"Stream one CSV line per operation to FILE: start_unix_ns, phase, function, duration_us, error_class (docs/workload.md)."`
	Timeseries         string        `name:"timeseries" placeholder:"FILE" help:"Stream one CSV line per closed interval and function (start, phase, function, operations, errors, p50/p95/p99/max ms) to FILE."`
	TimeseriesInterval time.Duration `name:"timeseries-interval" placeholder:"DUR" default:"0s" help:"Length of a timeline interval (CSV, the report's Over time section and charts); 0: chosen from the measurement window, about 30 intervals of at least 1s (the report states it)."`
	Quiet              bool          `short:"q" help:"No progress lines on stderr."`
	runFlags           `embed:""`
	usersFlag          `embed:""`
	shardFlags         `embed:""`
	generatorFlags     `embed:""`
}

func (runCmd) Help() string {
	return `Runs the workload through warm-up, measurement and ramp-down, then prints
the compliance table. Without a config it runs the shipped "quick" workload
(about a minute) against an embedded in-process IMAP/SMTP target and sink.

The first Ctrl-C (or SIGTERM, or SIGHUP) stops new sessions, drains, and
writes the report marked PARTIAL; a second one cuts the running sessions
and writes what the run has, marked PARTIAL, within a second (past that
second the process exits without it); a third exits at once.

Exit codes: 0 compliant, 1 not compliant, 2 usage or config error,
3 the run could not be carried out or is no result for the server (a
stopped, partial run; a target that refused every connection from the
start; a GENERATOR-BOUND run, where mailbench itself was the bottleneck:
the report is written but is not a valid result).

Examples:
  mailbench run
  mailbench run dovecot-postfix --json result.json
  mailbench run quick --json - | jq .compliance.compliant
  mailbench run enterprise --rate 6000 --measurement 10m --results ops.csv
  mailbench run enterprise --timeseries over-time.csv --timeseries-interval 30s
  mailbench run my.toml --manager 10.0.0.5:7070 --token-file token   # a generator of 'mailbench manage'`
}

// The bounds of --timeseries-interval: below a tenth of a second the
// timeline's points are noise; above a day no run shows two of them.
const (
	minTimeseriesInterval = 100 * time.Millisecond
	maxTimeseriesInterval = 24 * time.Hour
)

func (c *runCmd) Run(e *env) error {
	if c.Manager != "" {
		return c.runGenerator(e)
	}
	if c.TokenFile != "" {
		return usage(errors.New("--token-file is a generator's (with --manager)"))
	}
	if d := c.TimeseriesInterval; d != 0 && (d < minTimeseriesInterval || d > maxTimeseriesInterval) {
		return usage(fmt.Errorf("--timeseries-interval %v: out of range: must be %v to %v (or 0: chosen from the window)", d, minTimeseriesInterval, maxTimeseriesInterval))
	}
	cfg, err := e.loadConfig(c.Config, c.runFlags.overrides(c.usersFlag))
	if err != nil {
		return err
	}
	if err := distinctOutputs("json", c.JSON, "html", c.HTML, "results", c.Results, "timeseries", c.Timeseries); err != nil {
		return err
	}
	jsonOut, htmlOut, err := createReportOutputs(e, c.JSON, c.HTML)
	if err != nil {
		return err
	}
	defer jsonOut.abandon()
	defer htmlOut.abandon()
	if err := probeOutput("results", c.Results); err != nil {
		return err
	}
	if err := probeOutput("timeseries", c.Timeseries); err != nil {
		return err
	}
	stop, kill, release := signalContexts(e.stderr)
	defer release()
	opts, stopMetrics, err := c.runFlags.runOptions(e, c.Quiet, cfg.Name)
	if err != nil {
		return err
	}
	defer stopMetrics()
	opts.TimeseriesInterval = c.TimeseriesInterval
	if opts.ShardOptions, err = c.shardFlags.options(); err != nil {
		return err
	}
	// The CSV streams are written beside their paths (PATH.partial) and put
	// in place only when the run reports; a run that fails keeps what it
	// wrote in PATH.partial and leaves PATH as it was.
	streams, err := createStreams(c.Results, c.Timeseries)
	if err != nil {
		return err
	}
	opts.Results, opts.Timeseries = streams.results, streams.timeseries
	run, err := orchestrator.Run(stop, kill, cfg, opts)
	if cerr := streams.finish(run != nil); cerr != nil && err == nil {
		err = &orchestrator.OutputError{Err: fmt.Errorf("the --results/--timeseries stream: %w", cerr)}
	}
	var streamErr *orchestrator.OutputError
	if err != nil && !(errors.As(err, &streamErr) && run != nil) {
		return err
	}
	if err := writeRun(e, run, jsonOut, htmlOut); err != nil {
		return errors.Join(err, orNil(streamErr))
	}
	if streamErr != nil {
		return outputError("--results/--timeseries", streamErr)
	}
	if cfg.Target.Embedded && !c.Quiet && !run.Partial {
		// The demo's last word: where a new user goes from here.
		out, flush := e.fit(e.stderr)
		fmt.Fprintln(out, nextAfterDemo)
		flush()
	}
	return runVerdict(run, errPartial, c.NoVerdictExit)
}

// nextAfterDemo ends a run against the embedded target.
const nextAfterDemo = "Next: this measured mailbench's built-in demo server. To measure yours: copy a config " +
	"(configs/dovecot-postfix.toml), then 'mailbench check my.toml --probe', 'mailbench init my.toml', " +
	"'mailbench run my.toml' or 'mailbench size my.toml' (README, \"Measure your server\"; docs/real-server.md)."

type checkCmd struct {
	Config    string        `arg:"" help:"Workload file, or the name of a shipped config."`
	Probe     bool          `name:"probe" help:"Also probe the server: log in over IMAP as the first user (its capabilities), connect to SMTP submission, and send one message to the remote domain through the server to a sink on sink.listen."`
	ProbeWait time.Duration `name:"probe-wait" default:"30s" placeholder:"DUR" help:"How long --probe waits for its message at the sink (default: ${default})."`
	JSON      bool          `name:"json" help:"Print the plan as JSON on stdout (schema mailbench-plan/1, docs/config.md); the machine's limits and the probe then go to stderr."`
	usersFlag `embed:""`
}

func (checkCmd) Help() string {
	return `Validates the workload file strictly (unknown keys, wrong types and bad
values are errors naming file:line, all reported at once) and prints the plan:
target rate, users, session mix, expected concurrency and the timed functions.

With --probe it then tries the server: IMAP login and capabilities (IDLE,
UIDPLUS, NAMESPACE, AUTH), SMTP submission (STARTTLS, AUTH), and one message
to the remote domain through the server to a sink of its own on sink.listen;
each failure names the config line to look at. Exit 3 when a probe fails.

Examples:
  mailbench check enterprise
  mailbench check quick --json | jq .concurrency
  mailbench check dovecot-postfix --probe`
}

func (c *checkCmd) Run(e *env) error {
	text := e.stdout
	if c.JSON {
		text = e.stderr
	}
	out, flush := e.fit(text)
	defer flush()
	cfg, err := e.loadConfig(c.Config, c.usersFlag.overrides())
	if err != nil {
		return err
	}
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		return usage(err)
	}
	// Users from a file count as run counts them: loaded (CheckInputs has
	// read the file already), so that the memory estimate is run's.
	if plan.UsersFile != "" {
		users, err := cfg.LoadUsers()
		if err != nil {
			return usage(err)
		}
		plan.Memory = plan.MemoryEstimate(len(users))
	}
	if c.JSON {
		if err := plan.WriteJSON(e.stdout); err != nil {
			return err
		}
	} else if err := plan.WriteText(out); err != nil {
		return err
	}
	// What run would say of the memory budget, before anything runs: a plan
	// that run refuses, check refuses (exit 2).
	if avail, err := host.AvailableMemory(); err != nil {
		fmt.Fprintf(out, "available:   unknown (%v); the memory budget is not checked\n", err)
	} else {
		fmt.Fprintf(out, "available:   %s (MemAvailable)\n", workload.FormatBytes(avail))
		if err := plan.Memory.CheckMemory(avail); err != nil {
			return usage(fmt.Errorf("%w (run refuses it; --ignore-memory-budget runs it anyway)", err))
		}
	}
	// And of the descriptors and ports it will hold.
	fds, fdErr := host.OpenFileLimit()
	ports, portErr := host.LocalPorts()
	limits := []string{}
	if fdErr == nil {
		limits = append(limits, fmt.Sprintf("%d descriptors (RLIMIT_NOFILE)", fds))
	}
	if portErr == nil {
		limits = append(limits, fmt.Sprintf("%d local ports per source address (ip_local_port_range)", ports))
	}
	if len(limits) > 0 {
		fmt.Fprintf(out, "limits:      %s\n", strings.Join(limits, ", "))
	}
	warnings, err := plan.Sockets().CheckSockets(fds, ports)
	if err != nil {
		return usage(err)
	}
	for _, w := range warnings {
		fmt.Fprintf(out, "warning:     %s\n", w)
	}
	if !c.Probe {
		return nil
	}
	if c.ProbeWait <= 0 || c.ProbeWait > time.Hour {
		return usage(fmt.Errorf("--probe-wait %v: out of range: must be above 0 and at most 1h0m0s", c.ProbeWait))
	}
	stop, release := signalContext(e.stderr)
	defer release()
	res, err := orchestrator.Probe(stop, cfg, c.ProbeWait)
	if err != nil {
		return couldNotRun(fmt.Errorf("probe: %w", err))
	}
	fmt.Fprintln(out)
	if err := res.WriteText(out); err != nil {
		return err
	}
	if !res.OK() {
		return couldNotRun(errors.New("the probe found the server not ready for this config (see above)"))
	}
	return nil
}

// orNil is err as an error, nil when err is nil (a typed nil pointer is not
// a nil error).
func orNil(err *orchestrator.OutputError) error {
	if err == nil {
		return nil
	}
	return err
}

// runStreams are run's --results and --timeseries files.
type runStreams struct {
	files               []*atomicfile.File
	results, timeseries io.Writer // nil when not asked for
}

func createStreams(results, timeseries string) (*runStreams, error) {
	s := &runStreams{}
	for _, o := range []struct {
		path string
		w    *io.Writer
	}{{results, &s.results}, {timeseries, &s.timeseries}} {
		if o.path == "" {
			continue
		}
		f, err := atomicfile.Create(o.path)
		if err != nil {
			s.finish(false)
			return nil, err
		}
		s.files = append(s.files, f)
		*o.w = f
	}
	return s, nil
}

// finish puts the files in place when the run reported, and otherwise
// keeps what they hold beside their paths.
func (s *runStreams) finish(reported bool) error {
	var errs []error
	for _, f := range s.files {
		if reported {
			errs = append(errs, f.Commit())
		} else {
			errs = append(errs, f.Keep())
		}
	}
	return errors.Join(errs...)
}
