// Package orchestrator carries out one whole benchmark run: it starts the sink and,
// when asked, the embedded target; runs the workload through its phases;
// waits for deliveries to settle; and assembles the report. It is the
// benchmark manager of the SPECmail2008 topology.
package orchestrator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/deliverycheck"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/ledger"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/message"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/population"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/session"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/target"
	"github.com/mailbench/mailbench/tlsconf"
	"github.com/mailbench/mailbench/workload"
)

// Version is the mailbench version written into reports.
var Version = "0.1.0-dev"

// Options are the run's settings besides the workload file.
type Options struct {
	// ResultsFile, when set, receives one CSV line per operation.
	ResultsFile string
	// Log receives progress and notices (stderr on the terminal); nil: none.
	Log io.Writer
	// Progress, when set, is called about once a second.
	Progress func(session.RunProgress)
	// TimeseriesFile, when set, receives one CSV line per closed timeline
	// interval and function (metrics.TimeseriesHeader).
	TimeseriesFile string
	// TimeseriesInterval is the timeline's interval; 0: metrics.DefaultInterval.
	TimeseriesInterval time.Duration
	// EmbeddedStarted, when set, is called once the embedded target is up
	// (tests use it to inject faults into the target mid-run).
	EmbeddedStarted func(*target.Target)
}

// ErrRun wraps failures that kept the run from being carried out (exit code 3).
type ErrRun struct{ Err error }

func (e *ErrRun) Error() string { return e.Err.Error() }
func (e *ErrRun) Unwrap() error { return e.Err }

// Run carries out the run that cfg describes. Cancelling stop ends the
// arrivals at once and drains (the report is then marked partial);
// cancelling kill cuts running sessions.
func Run(stop, kill context.Context, cfg *workload.Config, opts Options) (*report.Run, error) {
	logf := func(format string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", a...)
		}
	}
	users, err := cfg.LoadUsers()
	if err != nil {
		return nil, err
	}
	var sizes []int
	for _, s := range cfg.Messages.Sizes {
		sizes = append(sizes, int(s.Size))
	}
	gen, err := message.NewGenerator(cfg.Seed, sizes)
	if err != nil {
		return nil, err
	}
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	rules := compliance.RulesFor(plan)
	var warnings []string

	// The sink: where the SUT relays remote-domain mail. The ledger is
	// built once the recorder exists; the sink, started before, reaches it
	// through this pointer.
	var ledgerPtr atomic.Pointer[ledger.Ledger]
	sink, sinkTLS, err := startSink(cfg, func(a smtpsink.Arrival) {
		if l := ledgerPtr.Load(); l != nil {
			l.ArrivedRemote(a)
		}
	})
	if err != nil {
		return nil, err
	}
	if sink != nil {
		defer sink.Close()
		logf("sink listening on %s", sink.Addr())
	}

	imapCfg, smtpCfg, inboundCfg := session.ClientSettings(cfg)
	for _, ep := range []workload.Endpoint{cfg.Target.IMAP, cfg.Target.SMTP} {
		if ep.InsecureSkipVerify && ep.TLS != "none" && !cfg.Target.Embedded {
			warnings = append(warnings, fmt.Sprintf("TLS certificate verification is disabled for %s", ep.Address))
		}
	}
	if cfg.Target.Embedded {
		tg, err := startEmbedded(cfg, users, gen, sink, sinkTLS, &imapCfg, &smtpCfg)
		if err != nil {
			return nil, err
		}
		defer tg.Close()
		logf("embedded target: IMAP %s, SMTP %s, %d users populated", tg.IMAPAddr(), tg.SMTPAddr(), len(users))
		if opts.EmbeddedStarted != nil {
			opts.EmbeddedStarted(tg)
		}
	} else if imapCfg, smtpCfg, inboundCfg, err = session.ClientConfigs(cfg); err != nil {
		return nil, usageErr(err)
	}

	var stream io.Writer
	if opts.ResultsFile != "" {
		f, err := os.Create(opts.ResultsFile)
		if err != nil {
			return nil, err
		}
		stream = f
	}
	// The recorder's window is fixed from the intended run start; the runner
	// starts its clock right after, so the skew is microseconds.
	// The run's timeline, computed once: the runner's arrivals, the
	// recorder's phases and the checker's end all come from it.
	win := cfg.Phases.Window(time.Now())
	rec := metrics.NewRecorder(rules.Limits(), win, stream)
	// --- timeline (results over time): intervals, the CSV, sessions per interval.
	tlOpts := metrics.TimelineOptions{Interval: opts.TimeseriesInterval, Grace: 2*cfg.Load.OpTimeout.Duration + 10*time.Second}
	if opts.TimeseriesFile != "" {
		f, err := os.Create(opts.TimeseriesFile)
		if err != nil {
			rec.Close() // the results stream, if any
			return nil, err
		}
		tlOpts.CSV = f
	}
	rec.SetTimeline(tlOpts)
	progress := func(p session.RunProgress) {
		now := time.Now()
		rec.SessionsStarted(p.Sessions.Started, now)
		rec.Advance(now)
		if opts.Progress != nil {
			opts.Progress(p)
		}
	}
	// --- end timeline
	// The connect-time breakdown of the measurement window, beside the metrics.
	connect := metrics.NewBreakdown()
	connWindow := metrics.InWindow(connect, win.MeasureStart, win.MeasureEnd)
	// Generator health: impossible durations clamped and counted, the
	// process's CPU and GC over the window; a target that refuses every
	// connection from the start abandons the run (could not run).
	opTimeout := cfg.Load.OpTimeout.Duration
	stalls := &metrics.StallGuard{Limit: opTimeout + metrics.StallMargin(opTimeout)}
	use := metrics.WatchUse(win.MeasureStart, win.MeasureEnd)
	stop, stopRun := context.WithCancel(stop)
	defer stopRun()
	kill, killRun := context.WithCancel(kill)
	defer killRun()
	var couldNotRun atomic.Pointer[string]
	reach := &reachWatch{abandon: func(why string) {
		couldNotRun.Store(&why)
		logf("abandoning the run: %s", why)
		stopRun()
		killRun()
	}}
	observer := measure.ObserverFunc(func(o measure.Observation) {
		o = stalls.Check(o)
		reach.observe(o)
		rec.Observe(o)
		if o.Connect != nil {
			connWindow.Observe(o)
		}
	})

	runID := session.NewRunID()
	addrs := make([]string, len(users))
	for i, u := range users {
		addrs[i] = u.Address
	}
	led := ledger.New(runID, addrs, rec)
	ledgerPtr.Store(led)
	checker := deliverycheck.New(led, deliverycheck.Config{IMAP: imapCfg, Users: users})
	runner := &session.Runner{
		Config: cfg, Window: win, Users: users, IMAP: imapCfg, SMTP: smtpCfg, Gen: gen, RunID: runID,
		Inbound:  inboundFor(cfg, smtpCfg, inboundCfg),
		Observer: observer, Progress: progress,
		OnSent: func(m measure.Submission) {
			if sink == nil {
				m.Remote = nil // nobody can see it arrive: not counted as lost
			}
			led.Accepted(m)
		},
		OnSeen:     led.SeenLocal,
		OnBodyRead: led.BodyRead,
		OnRejected: func() { led.Rejected(1) },
	}
	checkCtx, stopChecker := context.WithCancel(kill)
	checkerDone := make(chan struct{})
	go func() {
		defer close(checkerDone)
		_ = checker.Run(checkCtx, win.RampdownEnd)
	}()
	logf("run %q: %.0f sessions/hour, %d users, warm-up %v, measurement %v, ramp-down %v",
		cfg.Name, cfg.TargetRate(), len(users), cfg.Phases.Warmup.Duration, cfg.Phases.Measurement.Duration, cfg.Phases.Rampdown.Duration)
	res, err := runner.Run(stop, kill)
	stopChecker()
	<-checkerDone
	genUse, useOK := use.Stop()
	if err != nil {
		return nil, &ErrRun{err}
	}

	// Settle: let accepted mail reach mailboxes and the sink, checking the
	// recipients that no session visited, until nothing is pending or the
	// settle time is over. A stopped run settles too: its report is
	// partial, but what it sent is still accounted for.
	if settle := cfg.Phases.Settle.Duration; settle > 0 && kill.Err() == nil {
		logf("settling: up to %v for deliveries", settle)
		checker.Settle(kill, time.Now().Add(settle))
	}
	led.Finish()
	rec.SessionsStarted(res.Sessions.Started, res.MeasureEnd) // the last second's sessions
	if err := rec.Close(); err != nil {
		warnings = append(warnings, fmt.Sprintf("results stream: %v", err))
	}
	rec2 := led.Reconcile()

	run := buildReport(cfg, res, rec, sink)
	run.Generator = generatorHealth(cfg, res, genUse, useOK, stalls)
	run.Delivery = &rec2
	run.Connect = connect.Snapshot()
	if cs := checker.Stats(); cs.Checks > 0 {
		run.DeliveryChecks = &report.CheckerSummary{Checks: cs.Checks, Commands: cs.Commands, Errors: cs.Errors}
	}
	run.Evaluate(rules)
	run.Warnings = append(run.Warnings, warnings...)
	if why := couldNotRun.Load(); why != nil {
		run.CouldNotRun = *why
	} else if res.Stopped {
		run.Partial = true
		run.PartialReason = "stopped by the user before the end of the measurement window"
	}
	return run, nil
}

func tlsOn(ep workload.Endpoint) bool { return ep.TLS != "" && ep.TLS != "none" }

// ConfigError is a problem with the workload that only shows when the run
// starts (an unreadable CA file, say): the CLI's usage exit code.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func usageErr(err error) error { return &ConfigError{err} }

// inboundFor is where the inbound stream delivers: the embedded target has
// one SMTP listener, so there it is the submission settings without AUTH.
func inboundFor(cfg *workload.Config, submit, inbound smtpclient.Config) smtpclient.Config {
	if cfg.Target.Embedded {
		submit.Auth = "none"
		return submit
	}
	return inbound
}

// embeddedFolders is what the embedded target creates besides its standard
// INBOX, Sent, Drafts and Trash: the configured folders, and the standard
// mailboxes under the names the config gives them.
func embeddedFolders(cfg *workload.Config) []string {
	out := append([]string(nil), cfg.Mailboxes.Folders...)
	for _, name := range cfg.Mailboxes.Standard() {
		if name != "Sent" && name != "Drafts" && name != "Trash" {
			out = append(out, name)
		}
	}
	return out
}

// startSink starts the sink cfg asks for (nil when it is disabled), telling
// onMessage of every arrival. It returns the sink's TLS configuration too,
// so that the embedded target's relay can trust exactly its certificate.
func startSink(cfg *workload.Config, onMessage func(smtpsink.Arrival)) (*smtpsink.Sink, *tls.Config, error) {
	if !cfg.Sink.Enabled {
		return nil, nil, nil
	}
	listen := cfg.Sink.Listen
	if cfg.Target.Embedded {
		listen = "127.0.0.1:0" // nobody else needs to find it
	}
	var sinkTLS *tls.Config
	if tlsOn(workload.Endpoint{TLS: cfg.Sink.TLS}) {
		var err error
		if sinkTLS, err = tlsconf.Server(cfg.Sink.CertFile, cfg.Sink.KeyFile); err != nil {
			return nil, nil, &ErrRun{fmt.Errorf("sink: %w", err)}
		}
	}
	sink, err := smtpsink.New(smtpsink.Options{
		Addr: listen, MaxMessageBytes: cfg.Sink.MaxMessageBytes, MaxRecipients: cfg.Sink.MaxRecipients,
		SaveDir: cfg.Sink.SaveDir, TLSConfig: sinkTLS, ImplicitTLS: cfg.Sink.TLS == "implicit",
		OnMessage: onMessage,
	})
	if err != nil {
		return nil, nil, &ErrRun{fmt.Errorf("sink: %w", err)}
	}
	if err := sink.Start(); err != nil {
		return nil, nil, &ErrRun{fmt.Errorf("sink: listen on %s: %w", listen, err)}
	}
	return sink, sinkTLS, nil
}

// startEmbedded starts the embedded target for cfg's users, populated from
// the seed and relaying to sink, and points the client settings at it. The
// target serves each endpoint's TLS mode (STARTTLS or implicit, IMAP and
// SMTP independently) with a certificate made for this run, which the
// clients then trust exactly.
func startEmbedded(cfg *workload.Config, users []workload.User, gen *message.Generator,
	sink *smtpsink.Sink, sinkTLS *tls.Config, imapCfg *imapclient.Config, smtpCfg *smtpclient.Config) (*target.Target, error) {
	var srvTLS *tls.Config
	if tlsOn(cfg.Target.IMAP) || tlsOn(cfg.Target.SMTP) {
		var roots *x509.CertPool
		var err error
		if srvTLS, roots, err = tlsconf.EmbeddedTLS(); err != nil {
			return nil, &ErrRun{fmt.Errorf("embedded target: %w", err)}
		}
		if imapCfg.TLSConfig, err = tlsconf.EmbeddedClient(cfg.Target.IMAP, roots); err != nil {
			return nil, err
		}
		if smtpCfg.TLSConfig, err = tlsconf.EmbeddedClient(cfg.Target.SMTP, roots); err != nil {
			return nil, err
		}
	}
	tu := make([]workload.User, len(users))
	for i, u := range users {
		tu[i] = workload.User{Login: u.Login, Password: u.Password, Address: u.Address}
	}
	// The relay speaks to the sink as an MTA would: STARTTLS when the sink
	// offers it, implicit TLS when the sink is implicit; it trusts exactly
	// the sink's certificate.
	relay, relayTLS := "", target.RelayOpportunisticTLS
	var relayTLSConfig *tls.Config
	if sink != nil {
		relay = sink.Addr().String()
		if sinkTLS != nil && len(sinkTLS.Certificates) > 0 && len(sinkTLS.Certificates[0].Certificate) > 0 {
			relayTLSConfig = tlsconf.PinnedClientTLS(sinkTLS.Certificates[0].Certificate[0])
		}
		if cfg.Sink.TLS == "implicit" {
			relayTLS = target.RelayImplicitTLS
		}
	}
	tg, err := target.Start(context.Background(), target.Options{
		Users: tu, LocalDomain: cfg.Users.LocalDomain, Folders: embeddedFolders(cfg),
		Populate: population.Func(cfg, gen), RelayAddr: relay, OpTimeout: cfg.Load.OpTimeout.Duration,
		TLSConfig: srvTLS, IMAPImplicitTLS: cfg.Target.IMAP.TLS == "implicit", SMTPImplicitTLS: cfg.Target.SMTP.TLS == "implicit",
		RelayTLS: relayTLS, RelayTLSConfig: relayTLSConfig,
	})
	if err != nil {
		return nil, &ErrRun{fmt.Errorf("embedded target: %w", err)}
	}
	imapCfg.Address, smtpCfg.Address = tg.IMAPAddr(), tg.SMTPAddr()
	return tg, nil
}
