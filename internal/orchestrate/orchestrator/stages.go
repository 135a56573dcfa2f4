package orchestrator

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/run/connected"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/run/idlewatch"
	"github.com/mailbench/mailbench/internal/run/inboxcheck"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// The stages of Execution.Run, each starting its parts as fields of the
// Execution and registering with e.started what Close must release.

// network is what the run's connections go over instead of TCP: the
// Options' Network, for the embedded target only.
func (e *Execution) network() Network {
	if e.cfg.Target.Embedded {
		return e.opts.Network
	}
	return nil
}

// startSink starts the sink where the server relays remote-domain mail
// (none when the config has none, or the sink is external). Mail that is
// not this run's (an earlier run's, retried by the server; stray mail) is
// foreign: the sink accepts it and keeps it out of its figures. The
// ledger, built later, receives the sink's arrivals through e.ledgerPtr;
// before it exists this run has sent nothing.
func (e *Execution) startSink() error {
	belongs := func(id string) bool {
		l := e.ledgerPtr.Load()
		if l == nil {
			return false
		}
		run, _, ok := delivery.ParseID(id)
		return ok && run == l.RunID()
	}
	sink, sinkTLS, err := startSink(e.opts.sinkConfig(e.cfg), e.network(), belongs, func(a delivery.Arrival) {
		if l := e.ledgerPtr.Load(); l != nil {
			l.ArrivedRemote(a)
		}
	})
	if err != nil {
		return err
	}
	e.sink, e.sinkTLS = sink, sinkTLS
	if sink != nil {
		e.started(func() { sink.Close() })
		e.logf("sink listening on %s", sink.Addr())
	}
	return nil
}

// startTarget sets the clients' settings for the target and, for the
// embedded target, starts it with the run's users.
func (e *Execution) startTarget() error {
	cfg, opts, nw := e.cfg, e.opts, e.network()
	e.eps = endpoints.Settings(cfg)
	if nw != nil {
		e.eps.IMAP.DialContext, e.eps.Submit.DialContext, e.eps.Inbound.DialContext = nw.DialContext, nw.DialContext, nw.DialContext
	}
	for _, ep := range []workload.Endpoint{cfg.Target.IMAP, cfg.Target.SMTP} {
		if ep.InsecureSkipVerify && ep.TLS != "none" && !cfg.Target.Embedded {
			e.warnings = append(e.warnings, fmt.Sprintf("TLS certificate verification is disabled for %s", ep.Address))
		}
	}
	switch {
	case opts.Target != nil:
		e.eps.IMAP.Address, e.eps.Submit.Address = opts.Target.IMAPAddr(), opts.Target.SMTPAddr()
	case cfg.Target.Embedded:
		tg, err := startEmbedded(cfg, nw, e.users, e.gen, e.sink, e.sinkTLS, &e.eps.IMAP, &e.eps.Submit, opts.EmbeddedOptions)
		if err != nil {
			return err
		}
		e.started(func() { tg.Close() })
		e.logf("embedded target: IMAP %s, SMTP %s, %d users populated", tg.IMAPAddr(), tg.SMTPAddr(), len(e.users))
		if opts.EmbeddedStarted != nil {
			opts.EmbeddedStarted(tg)
		}
	default:
		var err error
		if e.eps, err = endpoints.For(cfg); err != nil {
			return usageErr(err)
		}
	}
	return nil
}

// checkClock checks the server's clock against mailbench's (INTERNALDATE
// based delivery times depend on it). It runs before the window's clock is
// fixed: a server slow to answer it (stuck, or holding a login penalty)
// delays the start of the run, not its sessions, whose lateness would
// otherwise be charged to mailbench. It is bounded by op_timeout.
func (e *Execution) checkClock(kill context.Context) {
	if len(e.users) == 0 || kill.Err() != nil {
		return
	}
	if c, err := idlewatch.ProbeClock(kill, e.eps.IMAP, e.users[0], e.cfg.Mailboxes.Drafts); err != nil {
		e.warnings = append(e.warnings, fmt.Sprintf("server clock check failed: %v", err))
	} else {
		e.clock = &c
	}
}

// startRecorder starts the recorder over the run's timeline, with its
// timeline intervals and the caller's CSV streams, and what observes every
// operation beside it: the connect breakdown of the measurement window,
// the stall guard, the generator's CPU and GC, and the reach watch that
// abandons a run whose target refuses every connection from the start.
func (e *Execution) startRecorder() {
	cfg, opts := e.cfg, e.opts
	var stream io.Writer
	if opts.Results != nil {
		stream = notCloser{opts.Results}
	}
	// The run's timeline, computed once: the runner's arrivals, the
	// recorder's phases and the checker's end all come from it.
	e.win = cfg.Phases.Window(opts.start())
	e.rec = metrics.NewRecorder(e.rules.Limits(), e.win, stream)
	interval := opts.TimeseriesInterval
	if interval <= 0 {
		interval = metrics.AutoInterval(cfg.Phases.Measurement.Duration)
	}
	e.interval = interval
	tlOpts := metrics.TimelineOptions{Interval: interval, Grace: 2*cfg.Load.OpTimeout.Duration + 10*time.Second}
	if opts.Timeseries != nil {
		tlOpts.CSV = notCloser{opts.Timeseries}
	}
	e.rec.SetTimeline(tlOpts)
	e.connect = metrics.NewBreakdown()
	connWindow := metrics.InWindow(e.connect, e.win.MeasureStart, e.win.MeasureEnd)
	opTimeout := cfg.Load.OpTimeout.Duration
	e.stalls = &metrics.StallGuard{Limit: opTimeout + metrics.StallMargin(opTimeout)}
	e.use = metrics.WatchUse(e.win.MeasureStart, e.win.MeasureEnd)
	reach := &reachWatch{abandon: e.abandon}
	rec := e.rec
	if opts.Progress != nil {
		e.live = metrics.NewLive(e.rules.Limits())
	}
	live := e.live
	e.observer = measure.ObserverFunc(func(o measure.Observation) {
		o = e.stalls.Check(o)
		reach.observe(o)
		rec.Observe(o)
		if opts.Observer != nil {
			opts.Observer.Observe(o)
		}
		if live != nil {
			live.Observe(o)
		}
		if o.Connect != nil {
			connWindow.Observe(o)
		}
	})
	// Delivery times go to the recorder (and the extra observer); they
	// are not connects, so the breakdown never sees them.
	e.deliveries = rec
	if opts.Observer != nil {
		e.deliveries = measure.ObserverFunc(func(o measure.Observation) { rec.Observe(o); opts.Observer.Observe(o) })
	}
}

// progress is the runner's progress callback: the clients held and the
// sessions started go into the recorder's timeline, which advances, and
// the caller's progress display is told.
func (e *Execution) progress(p session.RunProgress) {
	now := time.Now()
	if pp := e.popNow.Load(); pp != nil {
		st := pp.Stats()
		p.Connected, p.ConnectedTarget = st.Connected, int64(len(pp.Users()))
		var drops int64
		for _, n := range st.Drops {
			drops += n
		}
		e.rec.ClientsProgress(p.ConnectedTarget, p.Connected, drops, now)
	}
	e.rec.SessionsStarted(p.Sessions.Started, now)
	e.rec.Advance(now)
	if e.opts.Progress != nil {
		e.opts.Progress(e.withLive(p, now))
	}
}

// worstEvery is how long the progress line's worst p95 is measured over:
// long enough for a p95 of a few operations a second, short enough to
// follow the run.
const worstEvery = 5 * time.Second

// withLive adds the live counts to p: the operations and errors so far,
// and the worst p95 against its limit, taken every worstEvery.
func (e *Execution) withLive(p session.RunProgress, now time.Time) session.RunProgress {
	if e.live == nil {
		return p
	}
	c := e.live.Counts()
	p.Operations, p.Errors = c.Operations, c.Errors
	if now.Sub(e.worstAt) >= worstEvery {
		e.worstAt = now
		e.worst = nil
		if w, ok := e.live.TakeWorst(); ok {
			e.worst = &session.WorstP95{Function: w.Function, P95: w.P95, Limit: w.Limit}
		}
	}
	p.Worst = e.worst
	return p
}

// startDelivery starts the delivery accounting and what feeds it: the
// ledger of what was sent and what arrived, the checker of the INBOXes no
// session visits, the runner whose sessions report to the ledger, the
// server's clock check, a few INBOXes watched for the whole run so that
// their deliveries are timed to the moment the server announced them
// (docs/config.md, [delivery]), and the connected clients of [clients].
// The watchers and the clients end with kill or with the returned func,
// which waits for them; it may be called more than once.
func (e *Execution) startDelivery(kill context.Context) (endWatch func()) {
	cfg, opts, users := e.cfg, e.opts, e.users
	e.runID = opts.runID(cfg, e.win)
	addrs := make([]string, len(users))
	for i, u := range users {
		addrs[i] = u.Address
	}
	e.led = delivery.NewLedger(e.runID, addrs, e.deliveries)
	limits := e.rules.Limits()
	e.led.SetLimits(limits[measure.DeliveryLocal], limits[measure.DeliveryRemote])
	if opts.externalSink() {
		e.led.SetExternalSink() // its remote deliveries are reconciled later, not missing
	}
	e.ledgerPtr.Store(e.led)
	e.checker = inboxcheck.New(e.led, inboxcheck.Config{IMAP: e.eps.IMAP, Users: users, SettleMargin: cfg.Phases.Settle.Duration})
	led, sink := e.led, e.sink
	// With [population] the SPEC sessions are the spec users'; the
	// groups' mail streams reach every user.
	runUsers, groups := users, cfg.Groups()
	if spec := specUsers(users, groups); len(spec) > 0 {
		runUsers = spec
	}
	e.runner = &session.Runner{
		Groups: groups, AllUsers: users,
		Config: cfg, Plan: e.plan, Window: e.win, Shard: opts.Shard, Users: runUsers, IMAP: e.eps.IMAP, SMTP: e.eps.Submit, Gen: e.gen, RunID: e.runID,
		Inbound:  inboundFor(cfg, e.eps.Submit, e.eps.Inbound),
		Observer: e.observer, Progress: e.progress,
		OnSent: func(m measure.Submission) {
			if sink == nil && !opts.externalSink() {
				m.Remote = nil // nobody can see it arrive: not counted as lost
			}
			led.Accepted(m)
		},
		OnSeen:     led.SeenLocal,
		OnBodyRead: led.BodyRead,
		OnDeleted:  led.Deleted,
		OnRejected: func() { led.Rejected(1) },
	}
	watchCtx, stopWatch := context.WithCancel(kill)
	waitWatch := func() {}
	if n := cfg.Delivery.WatchUsers; n > 0 {
		// Not waited for: the window's clock is running, and a server
		// slow to answer the watchers must not hold back the sessions
		// (their lateness would be charged to mailbench).
		e.watcher = idlewatch.New(led, idlewatch.Config{IMAP: e.eps.IMAP, Users: idlewatch.Sample(users, n), Poll: cfg.Delivery.WatchPoll.Duration})
		_, waitWatch = e.watcher.StartAsync(watchCtx)
	}
	// The connected population: from the run's start, in its ramp, until
	// the watchers stop (after settle); its held count is taken at the end
	// of the measurement window.
	e.pop, e.heldAtEnd = e.startClients(watchCtx, e.win, e.eps.IMAP, led, e.observer)
	if e.pop != nil {
		e.popNow.Store(e.pop)
	}
	return sync.OnceFunc(func() { stopWatch(); waitWatch() })
}

// populationSummary is the report's population: each group's plan
// (from the profiles, this shard's users) and its clients' counts.
func populationSummary(cfg *workload.Config, pop *connected.Population, window time.Duration) *report.PopulationSummary {
	groups := cfg.Groups()
	if len(groups) == 0 {
		return nil
	}
	var stats []connected.GroupStats
	if pop != nil {
		stats = pop.GroupStats()
	}
	ps := &report.PopulationSummary{}
	for _, g := range groups {
		r := g.Rates(cfg.Load.SessionsPerUserHour)
		pg := report.PopulationGroup{Name: g.Name(), Users: g.Count, PlannedSessionsPerHour: r.SessionsPerHour,
			PlannedConnections: r.ConnectionsHeld, PlannedReceivedPerHour: r.ReceivedPerHour, PlannedSentPerHour: r.SentPerHour}
		if !g.Client.SPEC {
			pg.Client = g.Client.Source
		}
		for _, st := range stats {
			if st.Name == g.Name() {
				pg.Users = st.Users
				pg.Held, pg.Connects, pg.Attempts, pg.Resyncs = st.Held, st.Connects, st.Attempts, st.Resyncs
				pg.NewMail, pg.Opened, pg.Removed, pg.Forgotten = st.NewMail, st.Opened, st.Removed, st.Forgotten
				if w := st.Window; window > 0 {
					pg.Window = &report.PopulationWindow{Seconds: window.Seconds(), Connects: w.Connects, Resyncs: w.Resyncs, NewMail: w.NewMail, Opened: w.Opened, Removed: w.Removed}
				}
			}
		}
		ps.Groups = append(ps.Groups, pg)
	}
	return ps
}

// windowCounted is how much of the measurement window the clients' window
// counts cover: all of it, or up to the stop (MarkHeld runs then); zero
// when the run stopped before the window began.
func windowCounted(win workload.Window, res *session.RunResult) time.Duration {
	end := win.MeasureEnd
	if res.Stopped && res.StopAt.Before(end) {
		end = res.StopAt
	}
	return max(end.Sub(win.MeasureStart), 0)
}

// specUsers are the users of the spec groups of a population, in order;
// nil without one.
func specUsers(users []workload.User, groups []workload.Group) []workload.User {
	var out []workload.User
	for _, g := range groups {
		if g.User.SPEC {
			out = append(out, users[g.First:min(g.First+g.Count, len(users))]...)
		}
	}
	return out
}

// settle lets accepted mail reach mailboxes and the sink, checking the
// recipients that no session visited, until every delivery is found or
// its delivery limit has passed, plus the settle margin: mail found after
// its limit is late, mail still missing then is lost. A stopped run
// settles too: its report is partial, but what it sent is still accounted
// for. A killed one does not.
func (e *Execution) settle(kill context.Context) {
	settle := e.cfg.Phases.Settle.Duration
	if settle <= 0 || kill.Err() != nil {
		return
	}
	limits := e.rules.Limits()
	limit := max(limits[measure.DeliveryLocal], limits[measure.DeliveryRemote])
	e.logf("settling: until every delivery is found or its limit (%v) has passed, plus %v", limit, settle)
	start := time.Now()
	stopProgress := e.settleProgress(start, limit+settle)
	defer stopProgress()
	e.checker.Settle(kill, start.Add(limit+settle))
}

// settleProgress tells the progress display, once a second until the
// returned func is called, how long the settle has left at most and how
// many deliveries it still awaits.
func (e *Execution) settleProgress(start time.Time, longest time.Duration) (stop func()) {
	if e.opts.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				missing, _ := e.led.Outstanding()
				e.opts.Progress(e.withLive(session.RunProgress{Phase: workload.Settle, Elapsed: now.Sub(start), Total: longest, Awaiting: int64(missing)}, now))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// assemble closes the accounting and the recorder and builds the run's
// report from its parts, evaluated against the run's rules. The error is
// an *OutputError when the caller's streams failed (the report stands).
func (e *Execution) assemble(res *session.RunResult, genUse metrics.GeneratorUse, useOK bool) (*report.Run, error) {
	cfg, opts := e.cfg, e.opts
	e.led.Finish()
	e.rec.SessionsStarted(res.Sessions.Started, res.MeasureEnd) // the last second's sessions
	var outErr error
	if err := e.rec.Close(); err != nil {
		e.warnings = append(e.warnings, fmt.Sprintf("results stream: %v", err))
		outErr = &OutputError{Err: fmt.Errorf("the --results/--timeseries stream: %w", err)}
	}
	rec2, pending := opts.reconcile(e.led)

	run := buildReport(cfg, e.plan, res, e.rec, e.sink)
	run.Generator = generatorHealth(cfg, res, genUse, useOK, e.stalls)
	if e.server != nil {
		run.Server = e.server.Report(e.win.MeasureStart, e.win.MeasureEnd, e.interval)
	}
	for _, c := range cfg.Server.Criteria {
		run.ServerCriteria = append(run.ServerCriteria, report.ServerCriterion{Figure: c.Figure, Max: c.Max})
	}
	run.Delivery = &rec2
	if hint := relayDiagnosis(cfg, rec2, pending, run.Target.Sink); hint != "" {
		run.Warnings = append(run.Warnings, hint)
	}
	opts.shardReport(cfg, run, e.runID, e.win, pending)
	run.Connect = e.connect.Snapshot()
	run.ServerClock = e.clock
	run.DeliveryTiming = deliveryTiming(e.watcher)
	run.Population = populationSummary(cfg, e.pop, windowCounted(e.win, res))
	if e.pop != nil && len(e.pop.Users()) > 0 {
		st := e.pop.Stats()
		run.Clients = &report.ClientsSummary{Target: len(e.pop.Users()), Held: e.heldAtEnd.Load(), Connects: st.Connects, Reconnects: st.Reconnects,
			Attempts: st.Attempts, Drops: st.Drops, Idles: st.Idles, Announced: st.Notified}
	}
	if cs := e.checker.Stats(); cs.Checks > 0 {
		run.DeliveryChecks = &report.CheckerSummary{Checks: cs.Checks, Commands: cs.Commands, Errors: cs.Errors, ErrorSamples: cs.ErrorSamples}
	}
	run.Evaluate(e.rules)
	run.Warnings = append(run.Warnings, e.warnings...)
	if why := e.couldNotRun.Load(); why != nil {
		run.CouldNotRun = *why
	} else if res.Stopped {
		run.Partial = true
		run.PartialReason = "stopped by the user before the end of the measurement window"
	}
	return run, outErr
}
