package main

import (
	"context"
	"errors"
	"io"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/tlscompare"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
)

// compareTLSCmd is `mailbench compare-tls`.
type compareTLSCmd struct {
	Config       string `arg:"" optional:"" help:"Workload file, or the name of a shipped config (default: quick, against the embedded target)."`
	PlainIMAP    string `name:"plain-imap" placeholder:"ADDR" help:"Plaintext IMAP address for the plaintext run when the config uses implicit TLS (e.g. 127.0.0.1:1143)."`
	PlainSMTP    string `name:"plain-smtp" placeholder:"ADDR" help:"Plaintext SMTP address for the plaintext run when the config uses implicit TLS."`
	Quiet        bool   `short:"q" help:"No progress lines on stderr."`
	runFlags     `embed:""`
	usersFlag    `embed:""`
	HTML         string `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with the variants side by side (docs/html-report.md)."`
	resumeFlag   `embed:""`
	managerFlags `embed:""`
}

func (compareTLSCmd) Help() string {
	return `Runs the same workload at the same load three times — plaintext, TLS, and
TLS with session resumption — and prints one table with the three side by
side: sessions/hour achieved, IMAP and SMTP connect time with its TCP, TLS,
greeting and authentication parts, handshakes resumed, compliance and the
generator's CPU time per session.

TLS uses each endpoint's tls mode from the config, or starttls where it
says none (so set ca_file / server_name there for a self-signed server).
An endpoint of a real server with implicit TLS needs --plain-imap /
--plain-smtp for the plaintext run; the embedded target serves every mode.

The first Ctrl-C (or SIGTERM) stops the current run (drained, partial)
and the comparison; a second one exits at once, with no table.

Exit codes: 0 every run compliant, 1 a run not compliant or failed,
2 usage or config error, 3 the comparison could not be carried out or was
stopped (a run stopped early is not a valid result).

Examples:
  mailbench compare-tls
  mailbench compare-tls dovecot-postfix-tls --measurement 30s
  mailbench compare-tls sut-imaps.toml --plain-imap 127.0.0.1:1143`
}

func (c *compareTLSCmd) Run(e *env) error {
	cfg, err := e.loadConfig(c.Config, c.runFlags.overrides(c.usersFlag))
	if err != nil {
		return err
	}
	if _, err := tlscompare.Variants(cfg, c.addresses()); err != nil {
		return usage(err)
	}
	return runCampaign(e, cfg, c.resumeFlag, campaignSteps{
		manager: c.managerFlags,
		command: "compare-tls", htmlPath: c.HTML, quiet: c.Quiet,
		options: func(context.Context) (orchestrator.Options, func(), error) {
			return c.runFlags.runOptions(e, c.Quiet, cfg.Name)
		},
		run: func(stop, kill context.Context, run campaign.RunFunc, log io.Writer) (campaignOutcome, error) {
			res, err := tlscompare.Run(stop, kill, cfg, tlscompare.Options{Run: run, Addresses: c.addresses(), Log: log})
			if err != nil {
				return campaignOutcome{}, err
			}
			return campaignOutcome{result: res, verdict: func(bool) error {
				for _, r := range res.Rows {
					if r.Partial {
						return couldNotRun(errors.New("the comparison was stopped: a run stopped early is not a valid result"))
					}
				}
				for _, r := range res.Rows {
					if r.Err != "" || !r.Compliant {
						return errNotCompliant
					}
				}
				return nil
			}}, nil
		},
	})
}

func (c *compareTLSCmd) addresses() tlscompare.Addresses {
	return tlscompare.Addresses{PlainIMAP: c.PlainIMAP, PlainSMTP: c.PlainSMTP}
}
