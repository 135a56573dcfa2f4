package main

import (
	"context"
	"io"
	"time"

	"github.com/mailbench/mailbench/orchestrator"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

type runCmd struct {
	Config             string        `arg:"" optional:"" help:"Workload file, or the name of a shipped config (default: quick, against the embedded target)."`
	JSON               string        `name:"json" placeholder:"FILE" help:"Also write the report as JSON (schema: docs/report-schema.md)."`
	HTML               string        `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with charts (docs/html-report.md)."`
	Results            string        `name:"results" placeholder:"FILE" help:"Stream one CSV line per operation to FILE."`
	Timeseries         string        `name:"timeseries" placeholder:"FILE" help:"Stream one CSV line per closed interval and function (start, phase, function, operations, errors, p50/p95/p99/max ms) to FILE."`
	TimeseriesInterval time.Duration `name:"timeseries-interval" placeholder:"DUR" default:"10s" help:"Length of a timeline interval (CSV and the report's Over time section)."`
	Quiet              bool          `short:"q" help:"No progress lines on stderr."`
	Duration           time.Duration `name:"measurement" placeholder:"DUR" help:"Override the measurement phase's length."`
	Rate               float64       `name:"rate" placeholder:"N" help:"Override the target sessions per hour."`
	shardFlags `embed:""`
}

func (runCmd) Help() string {
	return `Runs the workload through warm-up, measurement and ramp-down, then prints
the compliance table. Without a config it runs the shipped "quick" workload
(about a minute) against an embedded in-process IMAP/SMTP target and sink.

The first Ctrl-C (or SIGTERM) stops new sessions, drains, and writes the
report marked PARTIAL; a second one exits at once, with no report.

Exit codes: 0 compliant, 1 not compliant, 2 usage or config error,
3 the run could not be carried out (a stopped, partial run included: its
report is written but is not a valid result).

Examples:
  mailbench run
  mailbench run configs/dovecot-postfix.toml --json result.json
  mailbench run enterprise --rate 6000 --measurement 10m --results ops.csv
  mailbench run enterprise --timeseries over-time.csv --timeseries-interval 30s`
}

func (c *runCmd) Run(e *env) error {
	cfg, err := e.loadRunConfig(c.Config, c.Duration, c.Rate)
	if err != nil {
		return err
	}
	jsonOut, err := createOutput("json", c.JSON)
	if err != nil {
		return err
	}
	defer jsonOut.abandon()
	htmlOut, err := createOutput("html", c.HTML)
	if err != nil {
		return err
	}
	defer htmlOut.abandon()
	if err := probeOutput("results", c.Results); err != nil {
		return err
	}
	if err := probeOutput("timeseries", c.Timeseries); err != nil {
		return err
	}
	stop, release := signalContext(e.stderr)
	defer release()
	opts := runProgress(e, c.Quiet)
	opts.ResultsFile = c.Results
	opts.TimeseriesFile, opts.TimeseriesInterval = c.Timeseries, c.TimeseriesInterval
	if opts.ShardOptions, err = c.shardFlags.options(); err != nil {
		return err
	}
	run, err := orchestrator.Run(stop, context.Background(), cfg, opts)
	if err != nil {
		return err
	}
	if err := report.WriteText(e.stdout, run); err != nil {
		return err
	}
	if err := jsonOut.write(func(w io.Writer) error { return report.WriteJSON(w, run) }); err != nil {
		return err
	}
	if err := htmlOut.write(htmlWriter([]*report.Run{run}, report.HTMLOptions{})); err != nil {
		return err
	}
	if run.Partial {
		return errPartial
	}
	if !run.Table.Compliant && !c.NoVerdictExit {
		return errNotCompliant
	}
	return nil
}

type checkCmd struct {
	Config string `arg:"" help:"Workload file, or the name of a shipped config."`
}

func (checkCmd) Help() string {
	return `Validates the workload file strictly (unknown keys, wrong types and bad
values are errors naming file:line, all reported at once) and prints the plan:
target rate, users, session mix, expected concurrency and the timed functions.

Examples:
  mailbench check configs/enterprise.toml
  mailbench check quick`
}

func (c *checkCmd) Run(e *env) error {
	cfg, err := e.loadConfig(c.Config)
	if err != nil {
		return err
	}
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		return usage(err)
	}
	return plan.WriteText(e.stdout)
}
