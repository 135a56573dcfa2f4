// Command mailbench is a load generator and benchmark for IMAP/SMTP mail
// servers in the manner of SPECmail2008. This file maps flags to library
// calls; exit codes are decided in one place, exitCode.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/mailbench/mailbench/configs"
	"github.com/mailbench/mailbench/orchestrator"
	"github.com/mailbench/mailbench/workload"
)

// Exit codes.
const (
	exitCompliant    = 0 // the run was compliant (or the command succeeded)
	exitNotCompliant = 1 // the run finished and at least one row failed
	exitUsage        = 2 // bad flags or a bad config file
	exitRunFailed    = 3 // the run could not be carried out
)

// errNotCompliant is returned by commands whose run was not compliant.
var errNotCompliant = errors.New("not compliant")

// errPartial is returned when a run was stopped before its end: the report
// is written, marked partial, and is not a valid result (exit 3).
var errPartial = couldNotRun(errors.New("the run was stopped before the end of its measurement window: the report is partial"))

// usage marks err as a usage or config error (exit 2): the one type of
// those is orchestrator.ConfigError, which runs return too.
func usage(err error) error { return &orchestrator.ConfigError{Err: err} }

// couldNotRun marks err as "could not be carried out" (exit 3): the one
// type of those is orchestrator.ErrRun.
func couldNotRun(err error) error { return &orchestrator.ErrRun{Err: err} }

type cli struct {
	Users int `name:"users" placeholder:"N" help:"Override users.count of the workload (a pattern of N users)."`

	Run        runCmd        `cmd:"" help:"Run a workload and print the compliance table."`
	Check      checkCmd      `cmd:"" help:"Validate a workload file and print the run plan."`
	Sink       sinkCmd       `cmd:"" help:"Run the SMTP sink on its own (where the server under test relays remote mail)."`
	Report     reportCmd     `cmd:"" help:"Render or merge JSON reports of earlier runs."`
	CompareTLS compareTLSCmd `cmd:"" name:"compare-tls" help:"Run a workload in plaintext, TLS and TLS with resumption, side by side."`
	Sweep      sweepCmd      `cmd:"" help:"Run a workload at several load levels (and iterations) side by side."`
	Init       initCmd       `cmd:"" help:"Populate every user's folders on the server under test through IMAP APPEND."`
	Clean      cleanCmd      `cmd:"" help:"Remove what init and runs created on the server under test."`
	Certify    certifyCmd    `cmd:"" help:"Run a workload under the run rules (80%, 3 × 100%, 120%) and say whether the result is certifiable."`
	Size       sizeCmd       `cmd:"" help:"Find the highest compliant sessions/hour automatically (bracketing search)."`
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("mailbench"),
		kong.Description("A load generator and benchmark for IMAP/SMTP mail servers (SPECmail2008-style).\n\n"+
			"Examples:\n"+
			"  mailbench run                         # a one-minute run against the embedded target\n"+
			"  mailbench run configs/dovecot-postfix.toml --json result.json\n"+
			"  mailbench check configs/enterprise.toml\n"+
			"  mailbench sink --listen 127.0.0.1:2526"),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitPanic(code)) }),
		kong.UsageOnError(),
	)
	if err != nil {
		return exitCode(couldNotRun(err), stderr)
	}
	code := func() (code int) {
		defer func() {
			if r := recover(); r != nil {
				if e, ok := r.(exitPanic); ok {
					code = int(e)
					return
				}
				panic(r)
			}
		}()
		kctx, err := parser.Parse(args)
		if err != nil {
			return exitCode(usage(err), stderr)
		}
		err = kctx.Run(&env{stdout: stdout, stderr: stderr, users: c.Users})
		return exitCode(err, stderr)
	}()
	return code
}

type exitPanic int

// exitCode maps an error to the process exit code, and prints it: the one
// place exit codes are decided. nil is 0, errNotCompliant 1, an
// orchestrator.ConfigError (usage or config) 2, and anything else —
// orchestrator.ErrRun, or an error nobody classified — 3.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitCompliant
	}
	if errors.Is(err, errNotCompliant) {
		return exitNotCompliant
	}
	fmt.Fprintln(stderr, "mailbench:", err)
	var ce *orchestrator.ConfigError
	if errors.As(err, &ce) {
		return exitUsage
	}
	return exitRunFailed
}

// env is what every command gets.
type env struct {
	stdout, stderr io.Writer
	users          int // --users: overrides users.count when > 0
}

// loadConfig reads a workload file, or a shipped config by name, and
// applies the global overrides (--users).
func (e *env) loadConfig(arg string) (*workload.Config, error) {
	cfg, err := loadConfigFile(arg)
	if err != nil {
		return nil, usage(err)
	}
	if e == nil || e.users == 0 {
		return cfg, nil
	}
	if e.users < 0 {
		return nil, usage(fmt.Errorf("--users %d: must be > 0", e.users))
	}
	if cfg.Users.File != "" {
		return nil, usage(fmt.Errorf("--users: %s takes its users from %s", cfg.File, cfg.Users.File))
	}
	cfg.Users.Count = e.users
	if err := cfg.Validate(); err != nil {
		return nil, usage(err)
	}
	return cfg, nil
}

// loadConfigFile reads a workload file, or a shipped config by name.
func loadConfigFile(arg string) (*workload.Config, error) {
	if arg == "" {
		arg = "quick"
	}
	if _, err := os.Stat(arg); err == nil {
		return workload.Load(arg)
	}
	if data, ok := configs.Lookup(arg); ok {
		return workload.ParseConfig("configs/"+trimToml(arg)+".toml", data)
	}
	return nil, fmt.Errorf("%s: no such file, and not a shipped config (shipped: %v)", arg, configs.Names())
}

// loadRunConfig is loadConfig with the run-shaping flags applied over the
// file: a measurement length and a target rate, each when non-zero.
func (e *env) loadRunConfig(arg string, measurement time.Duration, rate float64) (*workload.Config, error) {
	cfg, err := e.loadConfig(arg)
	if err != nil {
		return nil, err
	}
	if measurement > 0 {
		cfg.Phases.Measurement.Duration = measurement
	}
	if rate > 0 {
		cfg.Load.SessionsPerHour = rate
	}
	return cfg, nil
}

func trimToml(s string) string {
	if len(s) > 5 && s[len(s)-5:] == ".toml" {
		return s[:len(s)-5]
	}
	return s
}

// signalContext returns stop, cancelled by the first SIGINT or SIGTERM:
// the command stops new sessions, drains, and writes its report marked
// partial. The second signal exits the process at once, exit code 3, after
// one line on stderr: nothing is drained and no report is written. release
// restores the default handling.
//
// The commands pass context.Background() as the libraries' kill context:
// nothing in the CLI cuts a run short but the second signal, which ends
// the process instead.
func signalContext(stderr io.Writer) (stop context.Context, release func()) {
	stop, cancelStop := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ch:
		}
		fmt.Fprintln(stderr, "\nmailbench: stopping: no new sessions; draining, then writing a partial report (Ctrl-C again to exit now)")
		cancelStop()
		select {
		case <-done:
			return
		case <-ch:
		}
		os.Exit(exitCode(couldNotRun(errors.New("second signal: exiting now, no report written")), stderr))
	}()
	return stop, func() { signal.Stop(ch); close(done); cancelStop() }
}
