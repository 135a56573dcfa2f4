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
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/internal/lib/host"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/lib/version"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/internal/observe/serverwatch"
	"github.com/mailbench/mailbench/internal/run/connected"
	"github.com/mailbench/mailbench/internal/run/idlewatch"
	"github.com/mailbench/mailbench/internal/run/inboxcheck"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/workload"
)

// Version is the mailbench version written into reports: the build's
// (internal/lib/version, what `mailbench version` prints).
var Version = version.String()

// Options are the run's settings besides the workload file.
type Options struct {
	// Results, when set, receives one CSV line per operation, as the run
	// goes (metrics.Recorder). The run never closes it: putting a file in
	// place, or keeping what a failed run wrote, is the caller's.
	Results io.Writer
	// Log receives progress and notices (stderr on the terminal); nil: none.
	Log io.Writer
	// Progress, when set, is called about once a second.
	Progress func(session.RunProgress)
	// Timeseries, when set, receives one CSV line per closed timeline
	// interval and function (metrics.TimeseriesHeader).
	Timeseries io.Writer
	// TimeseriesInterval is the timeline's interval; 0: chosen from the
	// measurement window (metrics.AutoInterval).
	TimeseriesInterval time.Duration
	// EmbeddedStarted, when set, is called once the embedded target is up,
	// before the first session: certify probes its banners there; tests
	// inject faults into it mid-run.
	EmbeddedStarted func(*demo.Target)
	// EmbeddedOptions, when set, may change the embedded target's options
	// before it starts (tests give it a latency or a contention knee:
	// demo.Options.Latency, demo.Options.Contention).
	EmbeddedOptions func(*demo.Options)
	// Observer, when set, also receives every timed operation of every
	// phase, as the recorder does (a live metrics endpoint, say). It must
	// be safe for concurrent use and must not block.
	Observer measure.Observer
	// ServerSample, when set, is told of every sample of the server
	// ([server]) as it is taken. It must not block.
	ServerSample func(metrics.ServerPoint)
	// IgnoreMemoryBudget runs a plan whose memory estimate exceeds the
	// machine's available memory (workload.Plan.Memory); by default Run
	// refuses it with a UsageError before any work starts.
	IgnoreMemoryBudget bool
	// Network, when set, carries every connection of a run against the
	// embedded target (clients, target, sink, relay) instead of TCP
	// sockets: tests pass an in-memory network (internal/testing/memnet) so that a
	// whole run executes inside testing/synctest. Ignored for real servers.
	Network Network
	// Sharding (docs/distributed.md): see ShardOptions.
	ShardOptions
}

// Network is a way to listen and dial other than TCP sockets.
type Network interface {
	Listen(ctx context.Context, network, address string) (net.Listener, error)
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// RunError is the one "could not be carried out" error: a failure that kept a
// run (or a command built on runs) from producing a valid result — a
// listener that could not start, a run stopped before its end. The CLI's
// exit code 3. Usage and configuration problems are UsageError instead.
type RunError struct{ Err error }

// OutputError is returned with the run's report when an output file the run
// streams (the per-operation results, the timeseries) could not be written
// completely: the report is good, the file is not (exit 3).
type OutputError struct{ Err error }

func (e *OutputError) Error() string { return e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// Run carries out the run that cfg describes: New, Execution.Run with the
// run's contexts (schedule.NewRunContexts) and Close. Cancelling stop ends
// the arrivals at once and drains (the report is then marked partial);
// cancelling kill cuts running sessions.
func Run(stop, kill context.Context, cfg *workload.Config, opts Options) (*report.Run, error) {
	e, err := New(stop, cfg, opts)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	rc, release := schedule.NewRunContexts(stop, kill)
	defer release()
	return e.Run(rc)
}

// An Execution is one run assembled from its parts. New works out what
// the run needs from the config (the server's namespace when asked, the
// plan, the memory budget, the users, the messages, the compliance rules)
// and starts nothing; Run starts the parts (the sink, the embedded
// target, the recorder and its output streams, the ledger, the IMAP
// checker and watchers, the runner), carries the run out, settles and
// reports it; Close releases whatever Run started, whatever happened,
// and is safe to call more than once. How it stops is the caller's:
// the run's contexts (schedule.RunContexts) that Run takes.
type Execution struct {
	cfg      *workload.Config
	opts     Options
	plan     *workload.Plan
	users    []workload.User
	gen      *message.Generator
	rules    compliance.Rules
	warnings []string
	logf     func(format string, a ...any)

	mu      sync.Mutex
	closers []func() // what Run started, in start order
	closed  bool

	// The parts Run starts (stages.go), in the order it starts them.
	abandon     func(why string)                     // ends the run as could not run
	couldNotRun atomic.Pointer[string]               // why it was abandoned
	sink        *smtpsink.Sink                       // nil: no sink, or an external one
	sinkTLS     *tls.Config                          // the sink's STARTTLS, for the embedded target's relay
	ledgerPtr   atomic.Pointer[delivery.Ledger]      // how the sink, started first, reaches the ledger
	eps         endpoints.Endpoints                  // the clients' settings: the sessions', the inbound stream's
	win         workload.Window                      // the run's timeline
	rec         *metrics.Recorder                    // every operation's timing
	connect     *metrics.Breakdown                   // the connect breakdown of the window
	stalls      *metrics.StallGuard                  // impossible durations, clamped
	use         *metrics.UseWatch                    // the generator's CPU and GC in the window
	observer    measure.Observer                     // what the sessions' operations reach
	deliveries  measure.Observer                     // what delivery times reach
	runID       uint32                               // this run's message-id tag
	led         *delivery.Ledger                     // what was sent and what arrived
	checker     *inboxcheck.Checker                  // the INBOXes no session visits
	clock       *delivery.ClockCheck                 // the server's clock; nil: not checked
	watcher     *idlewatch.Watcher                   // the watched INBOXes; nil: none
	pop         *connected.Population                // [clients]; nil: none
	popNow      atomic.Pointer[connected.Population] // pop, for the progress line
	heldAtEnd   *atomic.Int64                        // clients held at the window's end
	runner      *session.Runner                      // the sessions and the inbound stream
	live        *metrics.Live                        // the progress display's counts; nil: no display
	server      *serverwatch.Watcher                 // [server]; nil: nothing watched
	interval    time.Duration                        // the timeline's interval
	worst       *session.WorstP95                    // live's last worst p95, kept between takes
	worstAt     time.Time                            // when it was taken
}

// New assembles the run of cfg without starting it. With mailboxes.delimiter
// = "auto" it asks the IMAP server for its namespace (ctx bounds that);
// otherwise it performs no network I/O (it reads a users file).
func New(ctx context.Context, cfg *workload.Config, opts Options) (*Execution, error) {
	e := &Execution{opts: opts}
	e.logf = func(format string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", a...)
		}
	}
	cfg, nsLine, err := endpoints.ResolveNamespace(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if nsLine != "" {
		e.logf("mailboxes.delimiter = \"auto\": %s", nsLine)
	}
	e.cfg = cfg
	if e.plan, err = workload.NewPlan(cfg); err != nil {
		return nil, err
	}
	// The memory budget, before anything is allocated: users.count alone
	// can ask for more than the machine has.
	avail, memErr := availableMemory()
	if memErr != nil && !opts.IgnoreMemoryBudget {
		e.logf("memory budget not checked: %v", memErr)
	}
	if err := checkMemory(e.plan.Memory, avail, opts); err != nil {
		return nil, err
	}
	// The descriptors and ports the run will hold: an expected load above
	// the process's limits would fail connections on mailbench's side and
	// read as the server's errors.
	fdLimit, _ := openFileLimit()
	ports, _ := localPorts()
	sockWarnings, err := e.plan.Sockets().CheckSockets(fdLimit, ports)
	if err != nil {
		return nil, usageErr(err)
	}
	e.warnings = append(e.warnings, sockWarnings...)
	if e.users, err = cfg.LoadUsers(); err != nil {
		return nil, usageErr(err)
	}
	if e.plan.UsersFile != "" {
		if err := checkMemory(e.plan.MemoryEstimate(len(e.users)), avail, opts); err != nil {
			return nil, err
		}
	}
	sizes := cfg.MessageSizes() // messages.sizes and the user profiles' own
	if e.gen, err = message.NewGenerator(cfg.Seed, sizes); err != nil {
		return nil, err
	}
	e.rules = compliance.RulesFor(e.plan)
	return e, nil
}

// Plan is the plan of the run. It doesn't perform I/O.
func (e *Execution) Plan() *workload.Plan { return e.plan }

// Close releases what Run started: the embedded target and the sink.
func (e *Execution) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	return nil
}

// notCloser hides a writer's Close from the recorder: the caller's
// outputs are the caller's to close.
type notCloser struct{ io.Writer }

// started registers what Close must release.
func (e *Execution) started(closer func()) {
	e.mu.Lock()
	e.closers = append(e.closers, closer)
	e.mu.Unlock()
}

// Run carries the run out, in rc: when rc's arrivals end (the caller's
// stop) the run drains for its ramp-down grace and reports, marked
// partial; when its sessions are cut (the caller's kill) it reports what
// it has at once. A run whose arrivals ended before Run starts none. Call
// it once.
//
// It starts the run's parts in the order its data flows (stages.go): the
// sink, the target and the clients' settings, the recorder with what
// observes beside it, the delivery accounting with the runner that feeds
// it; it runs the runner, settles the deliveries and assembles the
// report.
func (e *Execution) Run(rc *schedule.RunContexts) (*report.Run, error) {
	kill := rc.Sessions
	e.abandon = func(why string) {
		e.couldNotRun.Store(&why)
		e.logf("abandoning the run: %s", why)
		rc.CutSessions()
	}
	if err := e.startSink(); err != nil {
		return nil, err
	}
	if err := e.startTarget(); err != nil {
		return nil, err
	}
	e.checkClock(kill)
	e.startRecorder()
	endServer := e.startServerWatch(kill)
	defer endServer()
	endWatch := e.startDelivery(kill)
	defer endWatch()

	checkCtx, stopChecker := context.WithCancel(kill)
	checkerDone := make(chan struct{})
	go func() {
		defer close(checkerDone)
		_ = e.checker.Run(checkCtx, e.win.RampdownEnd)
	}()
	cfg := e.cfg
	e.logf("run %q: %.0f sessions/hour, %d users, warm-up %v, measurement %v, ramp-down %v",
		cfg.Name, cfg.TargetRate(), len(e.users), cfg.Phases.Warmup.Duration, cfg.Phases.Measurement.Duration, cfg.Phases.Rampdown.Duration)
	res, err := e.runner.Run(rc)
	if e.pop != nil && time.Now().Before(e.win.MeasureEnd) { // stopped before the window's end
		e.heldAtEnd.Store(e.pop.Stats().Connected)
		e.pop.MarkHeld()
	}
	stopChecker()
	<-checkerDone
	genUse, useOK := e.use.Stop()
	if err != nil {
		// Nothing of this run outlives it: the watchers end, and what the
		// recorder buffered reaches the PATH.partial files kept below.
		endWatch()
		_ = e.rec.Flush()
		return nil, &RunError{err}
	}
	e.settle(kill)
	endWatch()
	endServer()
	return e.assemble(res, genUse, useOK)
}

// startServerWatch samples the server under test ([server]) every
// timeline interval from now until the returned func is called (after
// settle) or kill; none without a [server] source. It may be called more
// than once.
func (e *Execution) startServerWatch(kill context.Context) (end func()) {
	if !e.cfg.Server.Watched() {
		return func() {}
	}
	e.server = serverwatch.New(e.cfg.Server, serverwatch.Options{OnSample: e.opts.ServerSample})
	ctx, cancel := context.WithCancel(kill)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.server.Run(ctx, e.interval)
	}()
	return sync.OnceFunc(func() { cancel(); <-done })
}

// startClients starts the connected population of cfg's [clients], none
// when it has no connected users: those of the first clients.connected
// users that are this shard's, each timing its deliveries by the EXISTS that announced
// them. The returned counter is the number held at the end of the
// measurement window, set then. The population ends with ctx; Execution's
// closers wait for it.
func (e *Execution) startClients(ctx context.Context, win workload.Window, imapCfg imapclient.Config, led *delivery.Ledger, obs measure.Observer) (*connected.Population, *atomic.Int64) {
	cl := e.cfg.Clients
	held := &atomic.Int64{}
	var us []workload.User
	if cl.Connected > 0 {
		us = clientUsers(e.users, e.opts.Shard, cl.Connected)
	}
	groups := populationClients(e.cfg, e.users, e.opts.Shard)
	n := len(us)
	for _, g := range groups {
		n += len(g.Users)
	}
	if n == 0 {
		return nil, held
	}
	ramp := cl.Ramp.Duration
	if ramp == 0 {
		ramp = e.cfg.Phases.Warmup.Duration
	}
	// Of the clients' own operations only IDLE is a row of the table: their
	// connects, SELECTs and FETCHes are a client's, not the SPEC sessions'.
	// The profiles' clients time their actions as the Client rows.
	imapCfg.Observer = measure.ObserverFunc(func(o measure.Observation) {
		if o.Function == measure.IMAPIdle || (o.Function != measure.NewMailNotification && slices.Contains(measure.ClientFunctions, o.Function)) {
			obs.Observe(o)
		}
	})
	mailboxFolders := append([]string(nil), e.cfg.Mailboxes.Folders...)
	pop := connected.New(connected.Config{
		IMAP: imapCfg, Users: us, Ramp: ramp, Renew: cl.IdleRenew.Duration, Poll: cl.Poll.Duration,
		Folders:    append(e.cfg.Mailboxes.Standard(), e.cfg.Mailboxes.Folders...),
		BackoffMin: cl.BackoffMin.Duration, BackoffMax: cl.BackoffMax.Duration, Seed: uint64(e.cfg.ArrivalSeed()),
		Groups: groups, Observer: obs, MoveTo: mailboxFolders,
		OnRemoved: func(u workload.User, infos []delivery.MessageInfo) { led.Deleted(u.Address, infos) },
		OnNewMail: func(u workload.User, infos []delivery.MessageInfo, at time.Time) {
			ats := make([]time.Time, len(infos))
			for i := range ats {
				ats[i] = at
			}
			led.Announced(u.Address, infos, ats)
			// The notification: from the message's SMTP acceptance to the
			// EXISTS that told this client. A message the ledger has not
			// seen accepted yet (its 250 still on its way) is not timed.
			for _, info := range infos {
				if acc, ok := led.AcceptedAt(info.ID); ok {
					obs.Observe(measure.Observation{Function: measure.NewMailNotification, Start: acc, Duration: max(at.Sub(acc), 0)})
				}
			}
		},
		// Announced ahead of the message: timed when the client could
		// fetch it, the notification too (it could act on it only then).
		OnVisible: func(u workload.User, infos []delivery.MessageInfo, visibleAt, announcedAt time.Time) {
			vis, ann := make([]time.Time, len(infos)), make([]time.Time, len(infos))
			for i := range infos {
				vis[i], ann[i] = visibleAt, announcedAt
			}
			led.Visible(u.Address, infos, vis, ann)
			for _, info := range infos {
				if acc, ok := led.AcceptedAt(info.ID); ok {
					obs.Observe(measure.Observation{Function: measure.NewMailNotification, Start: acc, Duration: max(visibleAt.Sub(acc), 0)})
				}
			}
		},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		pop.Run(ctx, win.Start)
	}()
	begin := time.AfterFunc(time.Until(win.MeasureStart), pop.MarkWindowStart)
	timer := time.AfterFunc(time.Until(win.MeasureEnd), func() { held.Store(pop.Stats().Connected); pop.MarkHeld() })
	e.started(func() { begin.Stop(); timer.Stop(); <-done })
	if len(groups) > 0 {
		e.logf("connected clients: %d users (%d of [clients], the rest of [population]'s profiles), connecting over %v", n, len(us), ramp)
	} else {
		e.logf("connected clients: %d, connecting over %v", n, ramp)
	}
	return pop, held
}

// populationClients are the groups of [population] with connected
// clients, each with those of its users that are this shard's.
func populationClients(cfg *workload.Config, users []workload.User, shard schedule.Shard) []connected.Group {
	var out []connected.Group
	for _, g := range cfg.Groups() {
		if g.Client.SPEC || g.Count == 0 {
			continue
		}
		cg := connected.Group{Name: g.Name(), User: g.User, Client: g.Client}
		for j := range shard.Users(len(users)) {
			if u := shard.User(j); u >= g.First && u < g.First+g.Count {
				cg.Users = append(cg.Users, users[u])
			}
		}
		if len(cg.Users) > 0 {
			out = append(out, cg)
		}
	}
	return out
}

// clientUsers are the users of the connected population: the first
// connected of users; a shard takes those of them that are its own, so
// that the shards together hold the target.
func clientUsers(users []workload.User, shard schedule.Shard, connected int) []workload.User {
	var us []workload.User
	for j := range shard.Users(len(users)) {
		u := shard.User(j)
		if u >= connected {
			break
		}
		us = append(us, users[u])
	}
	return us
}

// deliveryTiming states how local deliveries were timed, for the report.
func deliveryTiming(w *idlewatch.Watcher) string {
	const others = "INTERNALDATE, ±0.5 s"
	if w == nil {
		return "local: " + others
	}
	st := w.Stats()
	switch st.Mode {
	case "IDLE":
		return fmt.Sprintf("local: %d watched INBOXes, IDLE (EXISTS), 1 ms; the others by %s", st.Users, others)
	case "poll":
		return fmt.Sprintf("local: %d watched INBOXes, polled every %v; the others by %s", st.Users, st.Resolution, others)
	}
	return fmt.Sprintf("local: %s (the %d watched INBOXes could not be watched: %s)", others, st.Users, st.LastError)
}

func tlsOn(ep workload.Endpoint) bool { return ep.TLS != "" && ep.TLS != "none" }

// UsageError is the one usage or configuration error: what the user gave is
// wrong — flags, the workload file (its workload.ConfigErrors wrapped), the
// users file, or a setting that only shows when the run starts (an
// unreadable CA file, say). The CLI's exit code 2; it recognises usage
// errors by this type alone.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErr(err error) error { return &UsageError{err} }

// openFileLimit and localPorts are host's; tests replace them.
var (
	openFileLimit = host.OpenFileLimit
	localPorts    = host.LocalPorts
)

// availableMemory is host.AvailableMemory; tests replace it.
var availableMemory = host.AvailableMemory

// checkMemory refuses, as a UsageError, a run whose estimated memory
// exceeds avail (unknown when <= 0), unless the options say to ignore it.
func checkMemory(e workload.MemoryEstimate, avail int64, opts Options) error {
	if opts.IgnoreMemoryBudget {
		return nil
	}
	if err := e.CheckMemory(avail); err != nil {
		return usageErr(err)
	}
	return nil
}

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
func startSink(cfg *workload.Config, nw Network, belongs func(string) bool, onMessage func(delivery.Arrival)) (*smtpsink.Sink, *tls.Config, error) {
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
			return nil, nil, &RunError{fmt.Errorf("sink: %w", err)}
		}
	}
	var listenFunc func(context.Context, string, string) (net.Listener, error)
	if nw != nil {
		listenFunc = nw.Listen
	}
	sink, err := smtpsink.New(smtpsink.Options{
		Listen: listenFunc,
		Addr:   listen, MaxMessageBytes: cfg.Sink.MaxMessageBytes, MaxRecipients: cfg.Sink.MaxRecipients,
		SaveDir: cfg.Sink.SaveDir, TLSConfig: sinkTLS, ImplicitTLS: cfg.Sink.TLS == "implicit",
		OnMessage: onMessage, Belongs: belongs,
	})
	if err != nil {
		return nil, nil, &RunError{fmt.Errorf("sink: %w", err)}
	}
	if err := sink.Start(); err != nil {
		return nil, nil, &RunError{fmt.Errorf("sink: listen on %s: %w", listen, err)}
	}
	return sink, sinkTLS, nil
}

// startEmbedded starts the embedded target for cfg's users, populated from
// the seed and relaying to sink, and points the client settings at it. The
// target serves each endpoint's TLS mode (STARTTLS or implicit, IMAP and
// SMTP independently) with a certificate made for this run, which the
// clients then trust exactly.
func startEmbedded(cfg *workload.Config, nw Network, users []workload.User, gen *message.Generator,
	sink *smtpsink.Sink, sinkTLS *tls.Config, imapCfg *imapclient.Config, smtpCfg *smtpclient.Config,
	adjust func(*demo.Options)) (*demo.Target, error) {
	var srvTLS *tls.Config
	if tlsOn(cfg.Target.IMAP) || tlsOn(cfg.Target.SMTP) {
		var roots *x509.CertPool
		var err error
		if srvTLS, roots, err = tlsconf.EmbeddedTLS(); err != nil {
			return nil, &RunError{fmt.Errorf("embedded target: %w", err)}
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
	relay, relayTLS := "", demo.RelayOpportunisticTLS
	var relayTLSConfig *tls.Config
	if sink != nil {
		relay = sink.Addr().String()
		if sinkTLS != nil && len(sinkTLS.Certificates) > 0 && len(sinkTLS.Certificates[0].Certificate) > 0 {
			relayTLSConfig = tlsconf.PinnedClientTLS(sinkTLS.Certificates[0].Certificate[0])
		}
		if cfg.Sink.TLS == "implicit" {
			relayTLS = demo.RelayImplicitTLS
		}
	}
	var (
		listen func(context.Context, string, string) (net.Listener, error)
		dial   func(context.Context, string, string) (net.Conn, error)
	)
	if nw != nil {
		listen, dial = nw.Listen, nw.DialContext
	}
	topts := demo.Options{
		Listen: listen, RelayDial: dial,
		Users: tu, LocalDomain: cfg.Users.LocalDomain, Folders: embeddedFolders(cfg),
		Populate: mailboxes.Func(cfg, gen), RelayAddr: relay, OpTimeout: cfg.Load.OpTimeout.Duration,
		TLSConfig: srvTLS, IMAPImplicitTLS: cfg.Target.IMAP.TLS == "implicit", SMTPImplicitTLS: cfg.Target.SMTP.TLS == "implicit",
		RelayTLS: relayTLS, RelayTLSConfig: relayTLSConfig,
	}
	if adjust != nil {
		adjust(&topts)
	}
	tg, err := demo.Start(context.Background(), topts)
	if err != nil {
		return nil, &RunError{fmt.Errorf("embedded target: %w", err)}
	}
	imapCfg.Address, smtpCfg.Address = tg.IMAPAddr(), tg.SMTPAddr()
	return tg, nil
}

// relayDiagnosis names the likely fault when the server accepted remote
// deliveries and the sink received none or under half of them: its relay of
// the remote domain to the sink's address. "" when the sink received them,
// when no sink of this run was the relay's target, or when the deliveries
// await reconciliation against an external sink.
func relayDiagnosis(cfg *workload.Config, rec delivery.Reconciliation, pending *delivery.Pending, sinkAddr string) string {
	if sinkAddr == "" || (pending != nil && len(pending.Deliveries) > 0) || rec.RemoteDeliveries == 0 || 2*rec.RelayedRemote >= rec.RemoteDeliveries {
		return ""
	}
	return fmt.Sprintf("diagnosis: the server accepted %d deliveries for the remote domain and the sink received %d: "+
		"the likely fault is the server's relay of users.remote_domain (%q) to sink.listen (%s): "+
		"check its transport or smarthost for that domain (docs/real-server.md)",
		rec.RemoteDeliveries, rec.RelayedRemote, cfg.Users.RemoteDomain, sinkAddr)
}
