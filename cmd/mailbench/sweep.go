package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/sweep"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
)

// sweepCmd is `mailbench sweep`.
type sweepCmd struct {
	Config       string    `arg:"" optional:"" help:"Workload file, or the name of a shipped config (default: quick, against the embedded target)."`
	Levels       []float64 `name:"levels" sep:"," default:"80,100,120" placeholder:"PCT" help:"Load levels in percent of the config's target rate (or, with --axis connected, of its clients.connected), run in this order. (default: ${default})"`
	Axis         string    `name:"axis" default:"rate" enum:"rate,connected,users" help:"What the levels vary: the session rate, the connected clients of [clients] at the config's rate, or the users of [population]'s mix. (default: ${default})"`
	Iterations   int       `name:"iterations" default:"1" placeholder:"N" help:"Runs per level (SPEC-style certification uses 3; the table shows medians). (default: ${default})"`
	JSON         string    `name:"json" placeholder:"FILE" help:"Also write the sweep as JSON, every run's report embedded (docs/sweep.md); FILE - writes it to stdout and the text report to stderr (for jq and CI)."`
	HTML         string    `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with every run side by side (docs/html-report.md)."`
	Quiet        bool      `short:"q" help:"No progress lines on stderr."`
	runFlags     `embed:""`
	resumeFlag   `embed:""`
	usersFlag    `embed:""`
	managerFlags `embed:""`
}

func (sweepCmd) Help() string {
	return `Runs the workload at several load levels — percentages of its target
rate — each level one or more times (iterations), one whole run after the
other, and prints one table with the levels side by side: target and
achieved sessions/hour, equivalent users, late/dropped sessions, the worst
function's % compliant, error rate, delivery lost/duplicated, each
iteration's verdict and the level's (PASS only if every iteration passed).
With several iterations the figures are medians (of an even count, the
mean of the two middle values). Below the table: the capacity (the highest
level compliant in every iteration) and the SPEC-style rule: the 80% and
100% levels must pass in every iteration.

The first Ctrl-C (or SIGTERM) stops the current run (its report is
partial) and the sweep; a second one exits at once, with no report.

Exit codes: 0 the 80% and 100% levels passed in every iteration, 1 they did
not (or are not in --levels), 2 usage or config error, 3 the sweep could not
be carried out (no run could, or it was stopped).

Examples:
  mailbench sweep
  mailbench sweep dovecot-postfix --levels 80,100,120 --iterations 3
  mailbench sweep enterprise --levels 50,75,100,125,150 --measurement 5m --json sweep.json`
}

func (c *sweepCmd) Run(e *env) error {
	cfg, err := e.loadConfig(c.Config, c.runFlags.overrides(c.usersFlag))
	if err != nil {
		return err
	}
	sopts := sweep.Options{Levels: c.Levels, Iterations: c.Iterations, Axis: c.Axis}
	if c.Iterations < 1 || c.Iterations > sweep.MaxIterations {
		return usage(fmt.Errorf("--iterations %d: out of range: must be 1 to %d", c.Iterations, sweep.MaxIterations))
	}
	if _, _, err := sweep.CheckOptions(sopts); err != nil {
		return usage(err)
	}
	return runCampaign(e, cfg, c.resumeFlag, campaignSteps{
		manager: c.managerFlags,
		command: "sweep", jsonPath: c.JSON, htmlPath: c.HTML, quiet: c.Quiet,
		options: func(context.Context) (orchestrator.Options, func(), error) {
			return c.runFlags.runOptions(e, c.Quiet, cfg.Name)
		},
		run: func(stop, kill context.Context, run campaign.RunFunc, log io.Writer) (campaignOutcome, error) {
			sopts.Run, sopts.Log = run, log
			res, err := sweep.Run(stop, kill, cfg, sopts)
			if err != nil {
				return campaignOutcome{}, err
			}
			return campaignOutcome{result: res, writeJSON: res.WriteJSON, verdict: func(bool) error {
				if res.Partial {
					return couldNotRun(errors.New("the sweep was stopped before its last run: levels not run in full are not valid results"))
				}
				if err := noneRan(res); err != nil {
					return err
				}
				if ok, _ := res.SPECRule(); !ok {
					return errNotCompliant
				}
				return nil
			}}, nil
		},
	})
}

// noneRan returns the first run's error when no run of res could be
// carried out (exit 3), else nil.
func noneRan(res *sweep.Result) error {
	var first string
	for _, l := range res.Levels {
		for _, it := range l.Iterations {
			if it.Err == "" {
				return nil
			}
			if first == "" {
				first = it.Err
			}
		}
	}
	if first == "" {
		return nil
	}
	return couldNotRun(errors.New("no run could be carried out: " + first))
}

// runProgress is the manager options of a multi-run command: progress
// lines on stderr every 5 s unless quiet.
func runProgress(e *env, quiet bool) orchestrator.Options {
	opts := orchestrator.Options{}
	if quiet {
		return opts
	}
	opts.Log = e.stderr
	opts.Progress = showRun(e.display)
	return opts
}
