package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/certify"
	"github.com/mailbench/mailbench/internal/campaign/sizing"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/workload"
)

// certifyCmd is `mailbench certify`.
type certifyCmd struct {
	Config       string `arg:"" optional:"" help:"Workload file, or the name of a shipped config."`
	JSON         string `name:"json" placeholder:"FILE" help:"Also write the certification as JSON, every run's report embedded (docs/run-rules.md); FILE - writes it to stdout and the text report to stderr (for jq and CI)."`
	HTML         string `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with every run side by side."`
	Quiet        bool   `short:"q" help:"No progress lines on stderr."`
	resumeFlag   `embed:""`
	usersFlag    `embed:""`
	managerFlags `embed:""`
}

func (certifyCmd) Help() string {
	return `Carries out a certification-style run under the run rules of
docs/run-rules.md: one run at 80% of the target rate, three iterations at
100% (each with its own derived schedule seed), one at 120%. Before every
run the mailboxes are initialised and verified (a fresh embedded target, or
clean + init + verify on a real server). Every rule is checked; a run that
breaks one is labelled NOT CERTIFIABLE with the rule named. Prints the
verdict, the median iteration, a table of the runs, the rules, the
disclosure (version, config hash, server banners, machine, [disclosure])
and the median iteration's full report.

Exit codes: 0 certifiable, 1 not certifiable, 2 usage or config error,
3 stopped or no run could be carried out.

Examples:
  mailbench certify quick            # the embedded demo target: not certifiable (run lengths), but every rule is shown
  mailbench certify dovecot-postfix --json cert.json --html cert.html --resume cert-state.json`
}

func (c *certifyCmd) Run(e *env) error {
	cfg, err := e.loadConfig(c.Config, overrides{users: c.Users})
	if err != nil {
		return err
	}
	opts := certify.Options{Disclosure: certify.Disclosure{MailbenchVersion: orchestrator.Version, Machine: certify.ProbeMachine()}}
	return runCampaign(e, cfg, c.resumeFlag, campaignSteps{
		manager: c.managerFlags,
		command: "certify", jsonPath: c.JSON, htmlPath: c.HTML, quiet: c.Quiet,
		options: func(stop context.Context) (orchestrator.Options, func(), error) {
			mopts := runProgress(e, c.Quiet)
			if cfg.Target.Embedded {
				// The embedded target lives for one run: record its banners
				// when the first run has started it.
				mopts.EmbeddedStarted = func(tg *demo.Target) {
					if opts.Disclosure.Banners.IMAPGreeting != "" || opts.Disclosure.Banners.Error != "" {
						return
					}
					eps := endpoints.Settings(cfg)
					ic, sc := eps.IMAP, eps.Submit
					ic.Address, sc.Address = tg.IMAPAddr(), tg.SMTPAddr()
					if cert := tg.Certificate(); cert != nil {
						// The embedded target's certificate is made for the run:
						// the probe trusts exactly it, as the run's clients do.
						ic.TLSConfig, sc.TLSConfig = tlsconf.PinnedClientTLS(cert), tlsconf.PinnedClientTLS(cert)
					}
					opts.Disclosure.Banners = certify.ProbeBanners(stop, cfg, &ic, &sc)
				}
			} else {
				opts.Disclosure.Banners = certify.ProbeBanners(stop, cfg, nil, nil)
				opts.Prepare = func(ctx context.Context, rc *workload.Config) error { return prepareMailboxes(ctx, e, rc, c.Quiet) }
			}
			return mopts, func() {}, nil
		},
		run: func(stop, kill context.Context, run campaign.RunFunc, log io.Writer) (campaignOutcome, error) {
			opts.Run, opts.Log = run, log
			res, err := certify.Run(stop, kill, cfg, opts)
			if err != nil {
				return campaignOutcome{}, err
			}
			res.Disclosure.Banners = opts.Disclosure.Banners // an embedded target's, recorded during the first run
			return campaignOutcome{result: res, writeJSON: res.WriteJSON, verdict: func(bool) error {
				if res.Partial {
					return couldNotRun(errors.New("the certification was stopped before its last run: not a valid result"))
				}
				if !res.Certifiable() {
					return errNotCompliant
				}
				return nil
			}}, nil
		},
	})
}

// prepareMailboxes brings a real server's mailboxes back to the population
// (clean, init) and verifies them, before a certification run.
func prepareMailboxes(ctx context.Context, e *env, cfg *workload.Config, quiet bool) error {
	popts := populate.Options{}
	if !quiet {
		popts.Progress = showJob(e.display)
	}
	if _, err := populate.Clean(ctx, cfg, popts); err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	if _, err := populate.Init(ctx, cfg, popts); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if _, err := populate.Verify(ctx, cfg, popts); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return nil
}

// renderResultJSON renders a certify or size JSON document (by its
// "schema") as text on w; handled is false for any other document (a run
// report), which the caller renders as before. For `mailbench report`:
// wire it in reportCmd.Run before report.ReadJSON.
func renderResultJSON(w io.Writer, name string) (handled bool, err error) {
	data, err := readReportFile(name)
	if err != nil {
		return false, nil // the caller reports it
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &head) != nil {
		return false, nil
	}
	switch head.Schema {
	case certify.Schema:
		r, err := certify.ReadJSON(bytes.NewReader(data))
		if err != nil {
			return true, usage(fmt.Errorf("%s: %w", name, err))
		}
		if err := r.WriteText(w); err != nil {
			return true, err
		}
		if !r.Certifiable() {
			return true, errNotCompliant
		}
		return true, nil
	case sizing.Schema:
		r, err := sizing.ReadJSON(bytes.NewReader(data))
		if err != nil {
			return true, usage(fmt.Errorf("%s: %w", name, err))
		}
		if err := r.WriteText(w); err != nil {
			return true, err
		}
		if !r.Found() {
			return true, errNotCompliant
		}
		return true, nil
	}
	return false, nil
}
