package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/sizing"
	"github.com/mailbench/mailbench/internal/lib/host"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/workload"
)

// growPopulation makes users from..cfg.Users.Count-1 of a real server ready
// for a size step: the top-up of `mailbench init` on those users only
// (from = 0: every user).
func growPopulation(ctx context.Context, e *env, cfg *workload.Config, from int, quiet bool) (sizing.Prepared, error) {
	users, err := cfg.LoadUsers()
	if err != nil {
		return sizing.Prepared{}, err
	}
	popts := populate.Options{Users: users[min(from, len(users)):], Workers: sizeInitWorkers}
	if !quiet {
		popts.Progress = showJob(e.display)
	}
	sum, err := populate.Init(ctx, cfg, popts)
	return sizing.Prepared{Users: sum.Users, Messages: sum.Appended, Elapsed: sum.Duration}, err
}

// sizeCmd is `mailbench size`.
type sizeCmd struct {
	Config       string         `arg:"" optional:"" help:"Workload file, or the name of a shipped config."`
	Budget       time.Duration  `name:"budget" placeholder:"DUR" help:"Stop starting runs when the next would not finish within DUR of the start (0: no limit)."`
	Precision    float64        `name:"precision" default:"5" placeholder:"PCT" help:"Width of the final bracket in percent of its lower end. (default: ${default})"`
	Axis         string         `name:"axis" default:"rate" enum:"rate,connected,users" help:"What the search varies: the session rate (with [clients] held as configured), the connected clients of [clients] at the config's rate, or the users of [population]'s mix. (default: ${default})"`
	Start        float64        `name:"start" placeholder:"N" help:"First level to try: sessions/hour, connected clients with --axis connected, users with --axis users (default: the config's)."`
	Confirm      int            `name:"confirm" default:"2" placeholder:"N" help:"Confirmation runs at the found rate (0: none). (default: ${default})"`
	Measurement  *time.Duration `name:"measurement" placeholder:"DUR" help:"Override the measurement phase's length (of each run)."`
	JSON         string         `name:"json" placeholder:"FILE" help:"Also write the search as JSON, every run's report embedded (docs/size.md); FILE - writes it to stdout and the text report to stderr (for jq and CI)."`
	HTML         string         `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with every run side by side."`
	Quiet        bool           `short:"q" help:"No progress lines on stderr."`
	FixedUsers   bool           `name:"fixed-users" help:"Keep the config's users in every step instead of rate ÷ load.sessions_per_user_hour (the result then has no users figure)."`
	DryRun       bool           `name:"dry-run" help:"Print the search's plan (users, messages and memory of each step of the climb) and exit."`
	resumeFlag   `embed:""`
	usersFlag    `embed:""`
	managerFlags `embed:""`
}

func (sizeCmd) Help() string {
	return `Finds the highest compliant sessions/hour of the workload on its server:
runs at the start rate, doubles the rate after every pass (halves it after
every failure) until the first failure (pass), then bisects between the
highest passing and the lowest failing rate until they are within
--precision percent, and confirms the found rate with --confirm more runs.
Every run has its own derived schedule seed and runs rate ÷
load.sessions_per_user_hour users: the population grows as the search
climbs (a top-up of the new users, as init does, on a real server; a fresh
embedded target within the memory budget). --users, --fixed-users or a
users file keep the population fixed: the result is then "N sessions/hour
on U mailboxes", never a users figure.

A run passes when every row passes with 95% confidence (a row with too few
operations is undecided: the run is repeated with a longer measurement),
nothing is lost, no session is dropped and the generator keeps up. A step
bounded only by mailbench (its concurrency cap, which is raised within the
memory budget, its population, memory or CPU) is no server failure: the
search ends "bounded by mailbench, not by the server". Prints the capacity
with its bracket, the run and the server's row that bounded it, and the p95
and % compliant of every function against load (docs/size.md).

With --axis connected the search varies the connected clients of [clients]
(long-lived IDLE sessions) at the config's session rate instead: "how many
connected users does the server hold beside this load?". With --axis users
(a config with [population]) it varies the users of the mix: every step runs
that many users of it, SPEC sessions, clients and mail together: "this
server carries N users of 70% heavy/desktop, 30% light/mobile".

Examples:
  mailbench size quick --dry-run
  mailbench size quick --budget 30m --json size.json
  mailbench size dovecot-postfix --measurement 2m --precision 10 --html size.html
  mailbench size quick --axis connected --start 500   # connected clients at the quick rate
  mailbench size mix --axis users --start 100          # users of a profile mix

Exit codes: 0 a capacity was found and confirmed, 1 not (the budget ran
out, nothing passed, a confirmation failed), 2 usage or config error,
3 stopped, a run could not be carried out, or the search was bounded by
mailbench, not by the server (no result for the server).`
}

func (c *sizeCmd) Run(e *env) error {
	cfg, err := e.loadConfig(c.Config, overrides{users: c.Users, measurement: c.Measurement})
	if err != nil {
		return err
	}
	opts := sizing.Options{Axis: sizing.Axis(c.Axis), Budget: c.Budget, Precision: c.Precision, Start: c.Start, Confirm: c.Confirm}
	if c.Confirm == 0 {
		opts.Confirm = -1
	}
	if c.Confirm < 0 {
		return usage(errors.New("--confirm: at least 0"))
	}
	if _, err := sizing.CheckOptions(opts); err != nil {
		return usage(err)
	}
	switch {
	case c.FixedUsers:
		opts.FixedUsers, opts.FixedUsersWhy = true, "--fixed-users"
	case c.Users != nil:
		opts.FixedUsers, opts.FixedUsersWhy = true, "--users"
	}
	if avail, err := host.AvailableMemory(); err == nil {
		opts.MemoryAvailable = avail
	}
	if c.DryRun {
		sp, err := sizing.PlanSearch(cfg, opts)
		if err != nil {
			return usage(err)
		}
		return sp.WriteText(e.stdout)
	}
	if !cfg.Target.Embedded {
		opts.Prepare = func(ctx context.Context, rc *workload.Config, from int) (sizing.Prepared, error) {
			return growPopulation(ctx, e, rc, from, c.Quiet)
		}
	}
	return runCampaign(e, cfg, c.resumeFlag, campaignSteps{
		manager: c.managerFlags,
		command: "size", jsonPath: c.JSON, htmlPath: c.HTML, quiet: c.Quiet,
		options: progressOnly(e, c.Quiet),
		run: func(stop, kill context.Context, run campaign.RunFunc, log io.Writer) (campaignOutcome, error) {
			opts.Run, opts.Log = run, log
			res, err := sizing.Search(stop, kill, cfg, opts)
			if err != nil {
				return campaignOutcome{}, err
			}
			return campaignOutcome{result: res, writeJSON: res.WriteJSON, verdict: func(stopped bool) error {
				if stopped {
					return couldNotRun(errors.New("the search was stopped: " + res.Stopped))
				}
				for _, p := range res.Probes {
					if p.Err != "" {
						return couldNotRun(errors.New(res.Stopped))
					}
				}
				if res.MailbenchBound != "" {
					return couldNotRun(errors.New(res.Stopped + ": no result for the server"))
				}
				if !res.Found() {
					return errNotCompliant
				}
				return nil
			}}, nil
		},
	})
}

// sizeInitWorkers is how many users a size step's top-up works on at once:
// more than init's default, since a search may have to make tens of
// thousands of users ready between two runs.
const sizeInitWorkers = 32
