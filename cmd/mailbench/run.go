package main

import (
	"os"
	"time"

	"github.com/mailbench/mailbench/orchestrator"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

type runCmd struct {
	Config             string        `arg:"" optional:"" help:"Workload file, or the name of a shipped config (default: quick, against the embedded target)."`
	JSON               string        `name:"json" placeholder:"FILE" help:"Also write the report as JSON (schema: docs/report-schema.md)."`
	Results            string        `name:"results" placeholder:"FILE" help:"Stream one CSV line per operation to FILE."`
	Timeseries         string        `name:"timeseries" placeholder:"FILE" help:"Stream one CSV line per closed interval and function (start, phase, function, operations, errors, p50/p95/p99/max ms) to FILE."`
	TimeseriesInterval time.Duration `name:"timeseries-interval" placeholder:"DUR" default:"10s" help:"Length of a timeline interval (CSV and the report's Over time section)."`
	Quiet              bool          `short:"q" help:"No progress lines on stderr."`
	Duration           time.Duration `name:"measurement" placeholder:"DUR" help:"Override the measurement phase's length."`
	Rate               float64       `name:"rate" placeholder:"N" help:"Override the target sessions per hour."`
}

func (runCmd) Help() string {
	return `Runs the workload through warm-up, measurement and ramp-down, then prints
the compliance table. Without a config it runs the shipped "quick" workload
(about a minute) against an embedded in-process IMAP/SMTP target and sink.

The first Ctrl-C stops new sessions, drains, and writes the report marked
PARTIAL; a second one exits at once.

Exit codes: 0 compliant, 1 not compliant, 2 usage or config error,
3 the run could not be carried out or is no result for the server (a
stopped, partial run; a target that refused every connection from the
start; a GENERATOR-BOUND run, where mailbench itself was the bottleneck:
the report is written but is not a valid result).

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
	stop, kill, release := signalContexts(e.stderr)
	defer release()
	opts := runProgress(e, c.Quiet)
	opts.ResultsFile = c.Results
	opts.TimeseriesFile, opts.TimeseriesInterval = c.Timeseries, c.TimeseriesInterval
	run, err := orchestrator.Run(stop, kill, cfg, opts)
	if err != nil {
		return err
	}
	if err := report.WriteText(e.stdout, run); err != nil {
		return err
	}
	if c.JSON != "" {
		f, err := os.Create(c.JSON)
		if err != nil {
			return err
		}
		if err := report.WriteJSON(f, run); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if run.Partial {
		return errPartial
	}
	if why := run.NotAResult(); why != "" {
		return noResult{why}
	}
	if !run.Table.Compliant {
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
		return usageError{err}
	}
	return plan.WriteText(e.stdout)
}
