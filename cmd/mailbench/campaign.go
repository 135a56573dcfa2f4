package main

import (
	"context"
	"errors"
	"io"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/workload"
)

// campaignSteps is what one campaign command (compare-tls, sweep, certify,
// size) adds to the steps they all share in runCampaign.
type campaignSteps struct {
	command            string // the --resume state's command, and the HTML title's
	jsonPath, htmlPath string // --json and --html ("" for none; compare-tls has no --json)
	quiet              bool
	// options gives the options of every run, once the signal contexts
	// exist (stop ends the current run gracefully), and what releases them.
	options func(stop context.Context) (orchestrator.Options, func(), error)
	// manager, when its --generators is set, carries each run out across
	// that many generators instead of in this process.
	manager managerFlags
	// run carries the campaign out with run as its one-run callback; log is
	// nil when quiet.
	run func(stop, kill context.Context, run campaign.RunFunc, log io.Writer) (campaignOutcome, error)
}

// campaignOutcome is a campaign's result as its command writes and judges
// it.
type campaignOutcome struct {
	result    campaign.Result
	writeJSON func(io.Writer) error // nil: the command writes no JSON
	// verdict is the command's error once the result is written (nil:
	// exit 0); stopped says the user stopped the campaign.
	verdict func(stopped bool) error
}

// runCampaign is every campaign command's life: its outputs created before
// any run (a path that cannot be written fails first), the signals (the
// first stops the current run gracefully, the second cuts it), the run
// options, --resume around the one-run callback, the campaign, then the
// text, JSON and HTML outputs, and the verdict.
func runCampaign(e *env, cfg *workload.Config, resume resumeFlag, s campaignSteps) error {
	jsonOut, htmlOut, err := createReportOutputs(e, s.jsonPath, s.htmlPath)
	if err != nil {
		return err
	}
	defer jsonOut.abandon()
	defer htmlOut.abandon()
	stop, kill, release := signalContexts(e.stderr)
	defer release()
	opts, done, err := s.options(stop)
	if err != nil {
		return err
	}
	defer done()
	one := campaign.Orchestrated(opts)
	g, err := s.manager.start(e, cfg)
	if err != nil {
		return err
	}
	verdict := errors.New("the campaign did not finish")
	if g != nil && (opts.Observer != nil || opts.IgnoreMemoryBudget) {
		g.close("refused")
		return usage(errors.New(errRunFlagsOnGenerators))
	}
	if g != nil {
		one = g.runFunc()
		defer func() { g.close(verdictOf(verdict)) }()
	}
	run, journal, err := resume.wrap(e, s.command, cfg, one)
	if err != nil {
		return err
	}
	defer logResume(e, journal)
	var log io.Writer
	if !s.quiet {
		log = e.stderr
	}
	out, err := s.run(stop, kill, run, log)
	if err != nil {
		return err
	}
	if err := writeResults(e, out.result, out.writeJSON, jsonOut, htmlOut, s.command+": "+cfg.Name); err != nil {
		return err
	}
	verdict = out.verdict(stop.Err() != nil)
	return verdict
}

// progressOnly are the run options of a command without live metrics:
// progress lines unless quiet.
func progressOnly(e *env, quiet bool) func(context.Context) (orchestrator.Options, func(), error) {
	return func(context.Context) (orchestrator.Options, func(), error) {
		return runProgress(e, quiet), func() {}, nil
	}
}
