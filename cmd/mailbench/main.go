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

	"github.com/mailbench/mailbench/internal/lib/runtimetune"
	"github.com/mailbench/mailbench/internal/lib/textfit"
	"github.com/mailbench/mailbench/internal/lib/version"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/status"
	"github.com/mailbench/mailbench/measure"
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
// those is orchestrator.UsageError, which runs return too.
func usage(err error) error { return &orchestrator.UsageError{Err: err} }

// noResult is the error of a run whose report is written but is no result
// for the server: the target could not be reached from the start (could
// not run) or the load generator was the bottleneck (GENERATOR-BOUND). It
// is a could-not-run error (exit 3).
func noResult(why string) error {
	return couldNotRun(fmt.Errorf("no result for the server: %s", why))
}

// couldNotRun marks err as "could not be carried out" (exit 3): the one
// type of those is orchestrator.RunError.
func couldNotRun(err error) error { return &orchestrator.RunError{Err: err} }

type cli struct {
	Version kong.VersionFlag `name:"version" help:"Print the version and exit."`

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
	DemoTarget demoTargetCmd `cmd:"" name:"demo-target" help:"Serve the demo target on its own, for generators in other processes."`
	Manage     manageCmd     `cmd:"" help:"Be the benchmark manager of a run across several load generators: hold the sink, start them together, merge their shards."`
	Vers       versionCmd    `cmd:"" name:"version" help:"Print mailbench's version (module version, VCS revision and time) and exit."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script (bash, zsh, fish)."`
	Help       helpCmd       `cmd:"" help:"Explain a command: the same as 'mailbench COMMAND --help'."`
}

// versionCmd is `mailbench version`: the version every report carries.
type versionCmd struct{}

func (versionCmd) Help() string {
	return `Prints the version every report, HTML page and certify disclosure carries:
the release's version (set by the release build) or the module's, the VCS
revision and time, and "modified" for a build of uncommitted changes.

Examples:
  mailbench version
  mailbench --version`
}

func (versionCmd) Run(e *env) error {
	_, err := fmt.Fprintln(e.stdout, "mailbench", version.String())
	return err
}

func main() {
	// First: keep the runtime's sysmon awake (a re-execution, once; see
	// internal/lib/runtimetune for why and for the measured cost it saves).
	runtimetune.Apply()
	// Then: run on the fewest cores that keep up (a command that wants a
	// fixed number, as sink --cores, ends the adaptation).
	runtimetune.AdaptCores()
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs mailbench with args and returns the exit code. Without
// arguments it prints the usage on stderr and exits 2, as for any other
// usage error.
func realMain(args []string, stdout, stderr io.Writer) int {
	var c cli
	out := stdout
	if len(args) == 0 {
		args, out = []string{"--help"}, stderr
	}
	parser, err := kong.New(&c,
		kong.Name("mailbench"),
		kong.Description("A load generator and benchmark for IMAP/SMTP mail servers (SPECmail2008-style).\n\n"+
			"Examples:\n"+
			"  mailbench run                         # a one-minute run against the embedded target\n"+
			"  mailbench run dovecot-postfix --json result.json\n"+
			"  mailbench check enterprise\n"+
			"  mailbench sink --listen 127.0.0.1:2526\n"+
			"  mailbench version"),
		kong.Writers(out, stderr),
		kong.Exit(func(code int) { panic(exitPanic(code)) }),
		kong.UsageOnError(),
		kong.Vars{
			"version":   "mailbench " + version.String(),
			"max_users": fmt.Sprint(workload.MaxUsers),
			"max_phase": workload.MaxPhase.String(),
			"max_rate":  fmt.Sprint(float64(workload.MaxSessionsPerHour)),
		},
	)
	if err != nil {
		return exitCode(couldNotRun(err), stderr)
	}
	bare := out == stderr
	code := func() (code int) {
		defer func() {
			if r := recover(); r != nil {
				if e, ok := r.(exitPanic); ok {
					code = int(e)
					if bare {
						code = exitUsage
					}
					return
				}
				panic(r)
			}
		}()
		kctx, err := parser.Parse(helpArgs(args))
		if err != nil {
			return exitCode(usage(err), stderr)
		}
		// One status line on stderr; what else is written to either
		// stream first erases it (stdout and stderr share a terminal).
		display := status.NewDisplay(stderr)
		_, width := status.Terminal(stdout)
		err = kctx.Run(&env{stdout: clearingWriter{stdout, display}, stderr: display.Log(), display: display, width: width(), app: parser.Model})
		return exitCode(err, display.Log())
	}()
	return code
}

type exitPanic int

// exitCode maps an error to the process exit code, and prints it: the one
// place exit codes are decided. nil is 0, errNotCompliant 1, an
// orchestrator.UsageError (usage or config) 2, and anything else —
// orchestrator.RunError, or an error nobody classified — 3.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitCompliant
	}
	if errors.Is(err, errNotCompliant) {
		return exitNotCompliant
	}
	fmt.Fprintln(stderr, "mailbench:", measure.Printable(err.Error())) // errors quote servers and files
	var ce *orchestrator.UsageError
	if errors.As(err, &ce) {
		return exitUsage
	}
	return exitRunFailed
}

// env is what every command gets.
type env struct {
	stdout, stderr io.Writer
	// display draws the status line on stderr (a redrawn line on a
	// terminal, plain lines elsewhere).
	display *status.Display
	// width is the text reports' width: stdout's terminal's, else
	// $COLUMNS, else 80.
	width int
	// app is the command line's model (completion scripts are made from it).
	app *kong.Application
	// jsonToStdout: --json - asked for the JSON on stdout; the text report
	// then goes to stderr (textOut).
	jsonToStdout bool
}

// fit returns w wrapped to the text width (textfit.Writer), and the
// flush that writes its last line.
func (e *env) fit(w io.Writer) (io.Writer, func() error) {
	f := textfit.NewWriter(w, e.textWidth())
	return f, f.Flush
}

// textWidth is e.width, or status.DefaultWidth when unset (tests).
func (e *env) textWidth() int {
	if e.width <= 0 {
		return status.DefaultWidth
	}
	return e.width
}

// textOut is where the text report goes: stdout, or stderr when stdout
// carries the JSON (--json -).
func (e *env) textOut() io.Writer {
	if e.jsonToStdout {
		return e.stderr
	}
	return e.stdout
}

// usersFlag is --users, embedded in the commands that load a workload
// (run, check, sweep, compare-tls, init, clean). nil: not given.
type usersFlag struct {
	Users *int `name:"users" placeholder:"N" help:"Override users.count of the workload (a pattern of N users, 1 to ${max_users})."`
}

// runFlags are the run-shaping flags of run, sweep and compare-tls; nil:
// not given.
type runFlags struct {
	Duration *time.Duration `name:"measurement" placeholder:"DUR" help:"Override the measurement phase's length (above 0, at most ${max_phase})."`
	Rate     *float64       `name:"rate" placeholder:"N" help:"Override the target sessions per hour (above 0, at most ${max_rate})."`

	MetricsListen      string `name:"metrics-listen" placeholder:"ADDR" help:"Serve live Prometheus metrics of the run on ADDR/metrics while it runs (docs/metrics.md)."`
	IgnoreMemoryBudget bool   `name:"ignore-memory-budget" help:"Run even when the plan's memory estimate exceeds the memory available (see check)."`
}

// overrides are the flags applied over a workload file; a nil field was
// not given.
type overrides struct {
	users       *int
	measurement *time.Duration
	rate        *float64
}

// check range-checks every flag that was given: the error names the flag,
// the value and the limit (workload's maximums), a usage error (exit 2).
func (o overrides) check() error {
	if o.users != nil {
		if n := *o.users; n < 1 || n > workload.MaxUsers {
			return usage(fmt.Errorf("--users %d: out of range: must be 1 to %d", n, workload.MaxUsers))
		}
	}
	if o.measurement != nil {
		if d := *o.measurement; d <= 0 || d > workload.MaxPhase {
			return usage(fmt.Errorf("--measurement %v: out of range: must be above 0 and at most %v", d, workload.MaxPhase))
		}
	}
	if o.rate != nil {
		if r := *o.rate; !(r > 0 && r <= workload.MaxSessionsPerHour) { // NaN fails too
			return usage(fmt.Errorf("--rate %g: out of range: must be above 0 and at most %g sessions per hour", r, float64(workload.MaxSessionsPerHour)))
		}
	}
	return nil
}

// loadConfig reads a workload file, or a shipped config by name, with the
// flags given laid over it (range-checked first) and validated once
// (workload.LoadNamed), and checks every other input a run reads
// (workload.(*Config).CheckInputs: the users file, the password variable,
// CA, certificate and key files). It is the one
// place check, run, sweep, compare-tls, init and clean load a workload, so
// that check passes exactly what run accepts, and every problem is a usage
// error (exit 2).
func (e *env) loadConfig(arg string, o overrides) (*workload.Config, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	cfg, err := workload.LoadNamed(arg, workload.Overrides{Users: o.users, Measurement: o.measurement, SessionsPerHour: o.rate})
	if err != nil {
		return nil, usage(err)
	}
	if err := cfg.CheckInputs(); err != nil {
		return nil, usage(err)
	}
	// A rate and window that schedule no session make a run of nothing:
	// refused here, naming what set them (a line of the file, or a flag).
	if expect := cfg.TargetRate() * cfg.Phases.Measurement.Duration.Hours(); expect < 1 && cfg.TargetRate() > 0 {
		return nil, usage(fmt.Errorf("%g sessions/hour (%s) over a %v measurement window (%s) schedule %.3g sessions: at least one is needed; raise either",
			cfg.TargetRate(), cfg.Where("load.sessions_per_hour"), cfg.Phases.Measurement.Duration, cfg.Where("phases.measurement"), expect))
	}
	return cfg, nil
}

// signalContext returns stop, cancelled by the first SIGINT, SIGTERM or
// SIGHUP: the command stops new sessions, drains, and writes its report
// marked partial. release restores the default handling. See
// signalContexts for the second signal.
func signalContext(stderr io.Writer) (stop context.Context, release func()) {
	stop, _, release = signalContexts(stderr)
	return stop, release
}

// secondSignalGrace is how long the command has, after the second signal,
// to write what it has before the process exits anyway.
const secondSignalGrace = time.Second

// signalContexts returns stop (see signalContext) and kill, cancelled by
// the second signal: the libraries cut what is running and the command
// writes what it has, marked partial. Whatever is not done within
// secondSignalGrace of the second signal is abandoned: the process exits,
// exit code 3, after one line on stderr (a third signal exits at once).
// release restores the default handling.
func signalContexts(stderr io.Writer) (stop, kill context.Context, release func()) {
	return signalContextsSaying(stderr, "stopping: no new sessions; draining, then writing a partial report (Ctrl-C again to cut it short)")
}

// signalContextsSaying is signalContexts with the first signal's message
// (after "mailbench: "): what the command does on it.
func signalContextsSaying(stderr io.Writer, first string) (stop, kill context.Context, release func()) {
	stop, cancelStop := context.WithCancel(context.Background())
	kill, cancelKill := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 3)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	exit := func(why string) {
		os.Exit(exitCode(couldNotRun(errors.New(why)), stderr))
	}
	go func() {
		select {
		case <-done:
			return
		case <-ch:
		}
		fmt.Fprintln(stderr, "\nmailbench: "+first)
		cancelStop()
		select {
		case <-done:
			return
		case <-ch:
		}
		fmt.Fprintln(stderr, "mailbench: second signal: cutting the run; writing what it has, marked PARTIAL, within a second")
		cancelKill()
		t := time.NewTimer(secondSignalGrace)
		select {
		case <-done:
			t.Stop()
		case <-ch:
			exit("third signal: exiting now")
		case <-t.C:
			exit("second signal: exiting now, the report was not written in time")
		}
	}()
	return stop, kill, func() { signal.Stop(ch); close(done); cancelStop(); cancelKill() }
}

// overrides of the workload flags given.
func (u usersFlag) overrides() overrides { return overrides{users: u.Users} }

// overrides of the workload and run-shaping flags given.
func (f runFlags) overrides(u usersFlag) overrides {
	return overrides{users: u.Users, measurement: f.Duration, rate: f.Rate}
}
