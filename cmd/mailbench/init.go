package main

import (
	"context"
	"fmt"

	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/workload"
)

type initCmd struct {
	Config    string `arg:"" help:"Workload file, or the name of a shipped config (e.g. dovecot-postfix)."`
	Workers   int    `short:"w" default:"8" help:"Users populated at once, one IMAP connection each. (default: ${default})"`
	Quiet     bool   `short:"q" help:"No progress display on stderr."`
	usersFlag `embed:""`
}

func (initCmd) Help() string {
	return `Populates every user's mailboxes on the server under test through IMAP
APPEND, per the config's [mailboxes] profile: INBOX, Sent, Drafts, Trash and
the extra folders are created (when missing) and subscribed, then filled
with messages drawn from the size distribution, reproducibly from the seed.

Idempotent: per mailbox, init reads the message count and appends only the
missing tail, so a second init tops up and never doubles. The summary line
gives the messages appended and the rate (messages/s).

The embedded target needs no init (it is populated when a run starts).

Examples:
  sudo scripts/sut/up -n 100 && mailbench init dovecot-postfix
  mailbench init my-server.toml --workers 16
  mailbench init dovecot-postfix -q`
}

func (c *initCmd) Run(e *env) error {
	return onRealServer(e, c.Config, c.usersFlag, c.Workers, c.Quiet, populate.Init)
}

type cleanCmd struct {
	Config    string `arg:"" help:"Workload file, or the name of a shipped config (e.g. dovecot-postfix)."`
	Workers   int    `short:"w" default:"8" help:"Users cleaned at once, one IMAP connection each. (default: ${default})"`
	Quiet     bool   `short:"q" help:"No progress display on stderr."`
	usersFlag `embed:""`
}

func (cleanCmd) Help() string {
	return `Removes what init and runs created on the server under test: every message
of INBOX, Sent, Drafts, Trash and the extra folders (STORE 1:* +FLAGS
(\Deleted), EXPUNGE) of every configured user, then deletes and unsubscribes
the extra folders ([mailboxes] folders), children first. Mailboxes that do
not exist are skipped, so clean can be run again.

This deletes mail. Point it only at test accounts.

Examples:
  mailbench clean dovecot-postfix
  mailbench clean my-server.toml --workers 16 -q`
}

func (c *cleanCmd) Run(e *env) error {
	return onRealServer(e, c.Config, c.usersFlag, c.Workers, c.Quiet, populate.Clean)
}

// onRealServer is what init and clean share: it loads the config, refuses
// bad worker counts and the embedded target (usage errors), runs op until it
// ends or a signal stops it, and prints op's summary to stdout, also when op
// fails part way.
func onRealServer[S fmt.Stringer](e *env, config string, users usersFlag, workers int, quiet bool,
	op func(context.Context, *workload.Config, populate.Options) (S, error)) error {
	cfg, err := e.loadConfig(config, users.overrides())
	if err != nil {
		return err
	}
	if workers < 1 {
		return usage(fmt.Errorf("--workers must be at least 1"))
	}
	if cfg.Target.Embedded {
		return usage(fmt.Errorf("%s: the embedded target is populated when a run starts; init and clean need a real server (target.embedded = false)", config))
	}
	stop, release := signalContext(e.stderr)
	defer release()
	opts := populate.Options{Workers: workers}
	if !quiet {
		opts.Progress = showJob(e.display)
	}
	s, err := op(stop, cfg, opts)
	fmt.Fprintln(e.stdout, s)
	return err
}
