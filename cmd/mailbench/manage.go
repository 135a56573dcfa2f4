package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/lib/version"
	"github.com/mailbench/mailbench/internal/orchestrate/manager"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// tokenFlag is the shared secret of a manager and its generators.
type tokenFlag struct {
	TokenFile string `name:"token-file" placeholder:"FILE" help:"The shared token of the manager and its generators (a Kubernetes Secret's file); default: $MAILBENCH_TOKEN."`
}

// token reads the token: the file's first line, else $MAILBENCH_TOKEN.
func (f tokenFlag) token() (string, error) {
	if f.TokenFile != "" {
		b, err := os.ReadFile(f.TokenFile)
		if err != nil {
			return "", usage(fmt.Errorf("--token-file: %w", err))
		}
		tok, _, _ := strings.Cut(string(b), "\n")
		if tok = strings.TrimSpace(tok); tok == "" {
			return "", usage(fmt.Errorf("--token-file %s: empty", f.TokenFile))
		}
		return tok, nil
	}
	if tok := strings.TrimSpace(os.Getenv("MAILBENCH_TOKEN")); tok != "" {
		return tok, nil
	}
	return "", usage(errors.New("no token: give --token-file FILE or set MAILBENCH_TOKEN (the same on the manager and every generator; e.g. head -c 32 /dev/urandom | base64)"))
}

// managerFlags make a command the benchmark manager of N generators
// (manage; and compare-tls, sweep, certify and size with --generators).
type managerFlags struct {
	Generators      int           `name:"generators" placeholder:"N" help:"Carry out every run across N load generators ('mailbench run --manager ADDR' on each): this process holds the sink, gives each run a common start and merges the shards (docs/distributed.md)."`
	ManagerListen   string        `name:"manager-listen" default:"127.0.0.1:7070" placeholder:"ADDR" help:"Where the generators reach the manager over HTTP (0.0.0.0:7070 for every interface). (default: ${default})"`
	RegisterTimeout time.Duration `name:"register-timeout" default:"5m" placeholder:"DUR" help:"How long to wait for all N generators to register. (default: ${default})"`
	StartDelay      time.Duration `name:"start-delay" default:"10s" placeholder:"DUR" help:"Each run starts this long after it is given out: time for the generators to prepare. (default: ${default})"`
	MaxClockOffset  time.Duration `name:"max-clock-offset" default:"500ms" placeholder:"DUR" help:"Refuse a generator whose clock is further than this from the manager's. (default: ${default})"`
	tokenFlag       `embed:""`
}

// managed is a manager serving its generators; close ends it.
type managed struct {
	m     *manager.Manager
	srv   *http.Server
	close func(verdict string)
}

// start makes the manager of cfg's runs and serves it; nil when
// --generators was not given.
func (f managerFlags) start(e *env, cfg *workload.Config) (*managed, error) {
	if f.Generators == 0 {
		return nil, nil
	}
	if cfg.Target.Embedded {
		return nil, usage(errors.New("--generators: the embedded target lives in each generator's process, so shards would load N servers: point target.imap and target.smtp at the one server under test (or 'mailbench demo-target')"))
	}
	if f.RegisterTimeout <= 0 || f.StartDelay < time.Second || f.MaxClockOffset <= 0 {
		return nil, usage(errors.New("--register-timeout and --max-clock-offset must be above 0, --start-delay at least 1s"))
	}
	if f.StartDelay > maxStartDelay {
		return nil, usage(fmt.Errorf("--start-delay %v: out of range: must be 1s to %v", f.StartDelay, maxStartDelay))
	}
	if err := checkListen("--manager-listen", f.ManagerListen); err != nil {
		return nil, usage(err)
	}
	tok, err := f.token()
	if err != nil {
		return nil, err
	}
	hash, err := manager.ConfigDigest(cfg)
	if err != nil {
		return nil, err
	}
	m, err := manager.New(manager.Options{Generators: f.Generators, Token: tok, Version: version.String(), ConfigHash: hash,
		RegisterTimeout: f.RegisterTimeout, StartDelay: f.StartDelay, MaxClockOffset: f.MaxClockOffset,
		StartSink: manager.StartSink, Log: e.stderr})
	if err != nil {
		return nil, usage(fmt.Errorf("--generators: %w", err))
	}
	ln, err := net.Listen("tcp", f.ManagerListen)
	if err != nil {
		return nil, couldNotRun(fmt.Errorf("--manager-listen: %w", err))
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(e.stderr, "mailbench manager on http://%s: waiting for %d generators ('mailbench run --manager %s')\n", ln.Addr(), f.Generators, ln.Addr())
	return &managed{m: m, srv: srv, close: func(verdict string) {
		m.Finish(verdict, 10*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}}, nil
}

// runFunc is the manager's campaign.RunFunc: each run across the
// generators, a shard's failure a could-not-run error naming it.
func (g *managed) runFunc() campaign.RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		r, err := g.m.Run(stop, kill, cfg)
		var se *manager.ShardsError
		if errors.As(err, &se) {
			return nil, couldNotRun(err)
		}
		return r, err
	}
}

// errRunFlagsOnGenerators refuses run flags that act where a run is carried
// out, which under a manager is each generator.
const errRunFlagsOnGenerators = "--metrics-listen and --ignore-memory-budget act where the runs are carried out: with a manager, give them to each 'mailbench run --manager'"

// verdictOf is the word the generators log at the end.
func verdictOf(err error) string {
	if err == nil {
		return "done"
	}
	return "ended: " + err.Error()
}

type manageCmd struct {
	Config       string `arg:"" help:"Workload file, or the name of a shipped config, pointing at the one server under test."`
	JSON         string `name:"json" placeholder:"FILE" help:"Also write the merged report as JSON (schema: docs/report-schema.md); FILE - writes it to stdout and the text report to stderr (for jq and CI)."`
	HTML         string `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML report with charts."`
	ReportInLog  bool   `name:"report-in-log" help:"Also print the merged JSON report on stdout between the lines -----BEGIN MAILBENCH REPORT----- and -----END MAILBENCH REPORT-----, after the text report: where the only output is a log (kubectl logs), 'mailbench report LOG' reads it back."`
	Quiet        bool   `short:"q" help:"No progress lines on stderr."`
	runFlags     `embed:""`
	usersFlag    `embed:""`
	managerFlags `embed:""`
}

func (manageCmd) Help() string {
	return `The benchmark manager of a run across several load generators (SPEC's
Benchmark Manager): it holds the SMTP sink on sink.listen, waits until
--generators N generators have registered over HTTP ('mailbench run
--manager ADDR' on each, with the same token), checks they run the same
mailbench and config, gives them a common start a few seconds ahead,
receives each shard's report, reconciles remote deliveries against its
sink, merges, prints and writes the one report, and exits with its verdict.
A generator that never registers, fails, goes silent or sends nothing by
its deadline makes the run "could not run", naming the shard.

compare-tls, sweep, certify and size take the same --generators flags and
carry out each of their runs this way.

Exit codes: as run's (0 compliant, 1 not compliant, 2 usage, 3 could not
run or partial).

Examples:
  mailbench manage my.toml --generators 3 --manager-listen 0.0.0.0:7070 --token-file token
  mailbench run my.toml --manager 10.0.0.5:7070 --token-file token   # on each generator`
}

func (c *manageCmd) Run(e *env) error {
	if c.Generators < 1 {
		return usage(errors.New("manage needs --generators N (1 or more)"))
	}
	if c.MetricsListen != "" || c.IgnoreMemoryBudget {
		return usage(errors.New(errRunFlagsOnGenerators))
	}
	cfg, err := e.loadConfig(c.Config, c.runFlags.overrides(c.usersFlag))
	if err != nil {
		return err
	}
	jsonOut, htmlOut, err := createReportOutputs(e, c.JSON, c.HTML)
	if err != nil {
		return err
	}
	defer jsonOut.abandon()
	defer htmlOut.abandon()
	stop, kill, release := signalContexts(e.stderr)
	defer release()
	g, err := c.managerFlags.start(e, cfg)
	if err != nil {
		return err
	}
	run, err := g.runFunc()(stop, kill, cfg)
	if err != nil {
		g.close(verdictOf(err))
		return err
	}
	if err := writeRun(e, run, jsonOut, htmlOut); err != nil {
		g.close(verdictOf(err))
		return err
	}
	if c.ReportInLog {
		if err := writeReportInLog(e.stdout, run); err != nil {
			g.close(verdictOf(err))
			return outputError("--report-in-log", err)
		}
	}
	g.close(run.Verdict())
	return runVerdict(run, errPartial, false)
}

// generatorFlags make run a generator under a manager.
type generatorFlags struct {
	Manager   string `name:"manager" placeholder:"ADDR" help:"Run as a load generator of the manager at ADDR ('mailbench manage', or a campaign with --generators): register, run each shard it gives, send its report. The shard index comes from the manager, or from $JOB_COMPLETION_INDEX."`
	tokenFlag `embed:""`
}

// runGenerator is run --manager: the generator's whole life.
func (c *runCmd) runGenerator(e *env) error {
	for flag, set := range map[string]bool{"--json": c.JSON != "", "--html": c.HTML != "", "--results": c.Results != "",
		"--timeseries": c.Timeseries != "", "--shard": c.Shard != "", "--start-at": c.StartAt != "", "--external-sink": c.ExternalSink} {
		if set {
			return usage(fmt.Errorf("%s cannot be combined with --manager: the manager gives the shard and start, holds the sink and writes the report", flag))
		}
	}
	tok, err := c.token()
	if err != nil {
		return err
	}
	if _, err := manager.ManagerURL(c.Manager); err != nil {
		return usage(fmt.Errorf("--manager: %w", err))
	}
	var base *workload.Config
	if c.Config != "" {
		if base, err = e.loadConfig(c.Config, c.runFlags.overrides(c.usersFlag)); err != nil {
			return err
		}
	} else if c.Rate != nil || c.Duration != nil || c.Users != nil {
		return usage(errors.New("--rate, --measurement and --users change a config: with --manager and no config the manager's is run as it is"))
	}
	index := -1
	if s := os.Getenv("JOB_COMPLETION_INDEX"); s != "" {
		if index, err = strconv.Atoi(s); err != nil || index < 0 {
			return usage(fmt.Errorf("JOB_COMPLETION_INDEX=%q: want a shard index (0 or more)", s))
		}
	}
	host, _ := os.Hostname()
	stop, kill, release := signalContexts(e.stderr)
	defer release()
	opts, stopMetrics, err := c.runFlags.runOptions(e, c.Quiet, "generator")
	if err != nil {
		return err
	}
	defer stopMetrics()
	var log io.Writer
	if !c.Quiet {
		log = e.stderr
	}
	out, err := manager.Serve(stop, kill, manager.GeneratorOptions{Manager: c.Manager, Token: tok, Version: version.String(),
		Host: host, Index: index, Base: base, Log: log,
		RunShard: func(stop, kill context.Context, cfg *workload.Config, sh schedule.Shard, at time.Time) (*report.Run, error) {
			o := opts
			o.ShardOptions = orchestrator.ShardOptions{Shard: sh, StartAt: at, ExternalSink: true}
			return orchestrator.Run(stop, kill, cfg, o)
		}})
	if err != nil {
		var cfgErr *orchestrator.UsageError
		if errors.As(err, &cfgErr) {
			return err
		}
		return couldNotRun(err)
	}
	fmt.Fprintf(e.stdout, "generator: %d runs reported to the manager; its verdict: %s\n", out.Steps, out.Verdict)
	if out.Partial {
		return errPartial
	}
	return nil
}

// demoTargetCmd is `mailbench demo-target`.
type demoTargetCmd struct {
	Config    string `arg:"" optional:"" help:"Workload file, or the name of a shipped config: its users, mailboxes and seed (default: quick)."`
	IMAP      string `name:"imap" default:"127.0.0.1:1143" placeholder:"ADDR" help:"IMAP listen address. (default: ${default})"`
	SMTP      string `name:"smtp" default:"127.0.0.1:1587" placeholder:"ADDR" help:"SMTP listen address. (default: ${default})"`
	Relay     string `name:"relay" placeholder:"ADDR" help:"Where mail for other domains is relayed (default: the config's sink.listen)."`
	usersFlag `embed:""`
}

func (demoTargetCmd) Help() string {
	return `Serves mailbench's demo target on its own (plaintext IMAP and SMTP, in
memory), with the users and mailboxes a run of the config against the
embedded target would find, relaying remote mail to the sink: one server
for several generators of a manager, or the target in another process
than the load. A demo, not a mail server: its figures say nothing of one.
Ctrl-C stops it.

Examples:
  mailbench demo-target quick --imap 127.0.0.1:1143 --smtp 127.0.0.1:1587`
}

func (c *demoTargetCmd) Run(e *env) error {
	cfg, err := e.loadConfig(c.Config, c.usersFlag.overrides())
	if err != nil {
		return err
	}
	for flag, addr := range map[string]string{"--imap": c.IMAP, "--smtp": c.SMTP} {
		if err := checkListen(flag, addr); err != nil {
			return usage(err)
		}
	}
	relay := c.Relay
	if relay == "" {
		relay = cfg.Sink.Listen
	}
	tg, err := orchestrator.StartDemoTarget(cfg, c.IMAP, c.SMTP, relay)
	if err != nil {
		return err
	}
	defer tg.Close()
	fmt.Fprintf(e.stderr, "mailbench demo target: IMAP %s, SMTP %s, the users of %q, relaying to %s (Ctrl-C to stop)\n",
		tg.IMAPAddr(), tg.SMTPAddr(), cfg.Name, relay)
	stop, release := signalContext(e.stderr)
	defer release()
	<-stop.Done()
	return nil
}

// maxStartDelay bounds --start-delay: the generators prepare in seconds;
// a delay of days is a typo, not a plan.
const maxStartDelay = 24 * time.Hour
