package main

import (
	"context"
	"errors"
	"time"

	"github.com/mailbench/mailbench/sizing"
	"github.com/mailbench/mailbench/sweep"
)

// sizeCmd is `mailbench size`.
type sizeCmd struct {
	Config      string         `arg:"" optional:"" help:"Workload file, or the name of a shipped config."`
	Budget      time.Duration  `name:"budget" placeholder:"DUR" help:"Stop starting runs when the next would not finish within DUR of the start (0: no limit)."`
	Precision   float64        `name:"precision" default:"5" placeholder:"PCT" help:"Width of the final bracket in percent of its lower end."`
	Start       float64        `name:"start" placeholder:"N" help:"First rate to try in sessions/hour (default: the config's target rate)."`
	Confirm     int            `name:"confirm" default:"2" placeholder:"N" help:"Confirmation runs at the found rate (0: none)."`
	Measurement *time.Duration `name:"measurement" placeholder:"DUR" help:"Override the measurement phase's length (of each run)."`
	JSON        string         `name:"json" placeholder:"FILE" help:"Also write the search as JSON, every run's report embedded (docs/size.md)."`
	HTML        string         `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with every run side by side."`
	Quiet       bool           `short:"q" help:"No progress lines on stderr."`
	usersFlag   `embed:""`
}

func (sizeCmd) Help() string {
	return `Finds the highest compliant sessions/hour of the workload on its server:
runs at the start rate, doubles the rate after every pass (halves it after
every failure) until the first failure (pass), then bisects between the
highest passing and the lowest failing rate until they are within
--precision percent, and confirms the found rate with --confirm more runs.
Every run has its own derived schedule seed. A run passes when it is
complete, compliant and not generator-bound. Prints the capacity in
sessions/hour and users with its bracket, the failing run that bounded it
and the p95 of every function against load (docs/size.md).

Exit codes: 0 a capacity was found and confirmed, 1 not (the budget ran
out, nothing passed, a confirmation failed), 2 usage or config error,
3 stopped or a run could not be carried out.`
}

func (c *sizeCmd) Run(e *env) error {
	cfg, err := e.loadConfig(c.Config, overrides{users: c.Users, measurement: c.Measurement})
	if err != nil {
		return err
	}
	opts := sizing.Options{Budget: c.Budget, Precision: c.Precision, Start: c.Start, Confirm: c.Confirm}
	if c.Confirm == 0 {
		opts.Confirm = -1
	}
	if c.Confirm < 0 {
		return usage(errors.New("--confirm: at least 0"))
	}
	if _, err := sizing.CheckOptions(opts); err != nil {
		return usage(err)
	}
	jsonOut, htmlOut, err := createReportOutputs(c.JSON, c.HTML)
	if err != nil {
		return err
	}
	defer jsonOut.abandon()
	defer htmlOut.abandon()
	stop, release := signalContext(e.stderr)
	defer release()
	opts.Run = sweep.ManagerRunner(runProgress(e, c.Quiet))
	if !c.Quiet {
		opts.Log = e.stderr
	}
	res, err := sizing.Search(stop, context.Background(), cfg, opts)
	if err != nil {
		return err
	}
	runs, labels := res.RunsAndLabels()
	if err := writeResults(e, res.WriteText, res.WriteJSON, jsonOut, htmlOut, "size: "+res.Name, runs, labels); err != nil {
		return err
	}
	if stop.Err() != nil {
		return couldNotRun(errors.New("the search was stopped: " + res.Stopped))
	}
	for _, p := range res.Probes {
		if p.Err != "" {
			return couldNotRun(errors.New(res.Stopped))
		}
	}
	if !res.Found() {
		return errNotCompliant
	}
	return nil
}
