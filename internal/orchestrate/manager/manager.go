package manager

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// Options are the manager's settings; zero durations take the defaults
// below.
type Options struct {
	// Generators is how many load generators the run needs (N).
	Generators int
	// Token is the shared secret every request must carry; at least
	// MinTokenBytes long.
	Token string
	// Version is mailbench's version: every generator must run the same.
	Version string
	// ConfigHash is ConfigDigest of the base workload config: a
	// generator with a config of its own must have this one.
	ConfigHash string
	// RegisterTimeout bounds the wait for all N generators (default 5m).
	RegisterTimeout time.Duration
	// StartDelay puts each step's start instant this far after the step
	// is given out (default 10s): the generators receive it, resolve
	// their users and open their sockets in that time.
	StartDelay time.Duration
	// SilenceTimeout: a generator not heard from for this long (no poll,
	// no heartbeat) is dead (default 30s).
	SilenceTimeout time.Duration
	// ResultGrace is how long after a step's window, settle and delivery
	// limit a shard's report may still come (default 2m).
	ResultGrace time.Duration
	// MaxClockOffset is how far a generator's clock may be from the
	// manager's (default 500ms).
	MaxClockOffset time.Duration
	// PollWait is how long a step poll is held open (default 15s).
	PollWait time.Duration
	// StartSink starts the sink of one step (the SUT relays remote mail
	// to it); nil: no sink (remote deliveries stay pending: tests).
	StartSink func(cfg *workload.Config) (StepSink, error)
	// Log receives the manager's progress lines; nil: none.
	Log io.Writer
}

// MinTokenBytes is the shortest token the manager accepts.
const MinTokenBytes = 16

// StepSink is the sink of one step: the record of what arrived.
type StepSink interface {
	// Report is what the sink has recorded so far.
	Report() (*delivery.SinkReport, error)
	// Addr is where it listens.
	Addr() string
	Close() error
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.RegisterTimeout, 5*time.Minute)
	def(&o.StartDelay, 10*time.Second)
	def(&o.SilenceTimeout, 30*time.Second)
	def(&o.ResultGrace, 2*time.Minute)
	def(&o.MaxClockOffset, 500*time.Millisecond)
	def(&o.PollWait, 15*time.Second)
}

// Manager is the server side. New makes it; Handler serves the
// generators; Run carries out one step (a campaign.RunFunc); Finish tells
// the generators there are no more. Its methods are safe for concurrent
// use.
type Manager struct {
	opts Options

	mu         sync.Mutex
	gens       []*generator // by shard index; nil: not registered
	byID       map[string]*generator
	registered chan struct{} // closed once all N have registered
	changed    chan struct{} // closed and replaced when a step or the end is given out
	seq        int
	step       *stepState
	done       *Step
}

type generator struct {
	id, host, addr string
	index          int
	lastSeen       time.Time
	failed         string // its failure before any step
	sawDone        bool
}

// stepState is the step being carried out.
type stepState struct {
	step     Step // Index, Count: per generator
	deadline time.Time
	results  []*report.Run
	failures []string
	stop     bool
	changed  chan struct{} // closed and replaced when a shard reports
}

// New checks opts and makes a manager waiting for its generators.
func New(opts Options) (*Manager, error) {
	opts.defaults()
	switch {
	case opts.Generators < 1 || opts.Generators > MaxGenerators:
		return nil, fmt.Errorf("generators %d: out of range: must be 1 to %d", opts.Generators, MaxGenerators)
	case len(opts.Token) < MinTokenBytes:
		return nil, fmt.Errorf("the token is %d bytes: at least %d are needed (e.g. head -c 32 /dev/urandom | base64)", len(opts.Token), MinTokenBytes)
	}
	return &Manager{opts: opts, gens: make([]*generator, opts.Generators), byID: map[string]*generator{},
		registered: make(chan struct{}), changed: make(chan struct{})}, nil
}

// MaxGenerators is the most shards a run has (the run ids' 12 bits).
const MaxGenerators = 4096

func (m *Manager) logf(format string, a ...any) {
	if m.opts.Log != nil {
		fmt.Fprintf(m.opts.Log, "manager: "+format+"\n", a...)
	}
}

// Handler serves the generators' API. It doesn't block beyond PollWait.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+RegisterPath, m.register)
	mux.HandleFunc("GET "+StepPath, m.withGenerator(m.nextStep))
	mux.HandleFunc("POST "+BeatPath, m.withGenerator(m.beat))
	mux.HandleFunc("POST "+ResultPath, m.withGenerator(m.result))
	mux.HandleFunc("POST "+FailPath, m.withGenerator(m.fail))
	return m.authenticated(mux)
}

func (m *Manager) authenticated(h http.Handler) http.Handler {
	want := []byte("Bearer " + m.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mailbench manager"`)
			refuse(w, http.StatusUnauthorized, "no token, or not the manager's token")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func refuse(w http.ResponseWriter, code int, format string, a ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: fmt.Sprintf(format, a...)})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// decodeStrict reads one JSON value of at most limit bytes into v,
// refusing unknown fields and trailing data.
func decodeStrict(r io.Reader, limit int64, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("larger than %d bytes", limit)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

func (m *Manager) register(w http.ResponseWriter, r *http.Request) {
	var h Hello
	if err := decodeStrict(r.Body, maxRequestBytes, &h); err != nil {
		refuse(w, http.StatusBadRequest, "registration: %v", err)
		return
	}
	if h.Version != m.opts.Version {
		refuse(w, http.StatusConflict, "version %q: the manager runs %q; every generator must run the same mailbench", h.Version, m.opts.Version)
		return
	}
	if h.ConfigHash != "" && h.ConfigHash != m.opts.ConfigHash {
		refuse(w, http.StatusConflict, "the generator's workload config (hash %.12s) is not the manager's (%.12s): give every generator the same file and overrides, or none (it then runs the manager's)", h.ConfigHash, m.opts.ConfigHash)
		return
	}
	host := h.Host
	if len(host) > 253 {
		host = host[:253]
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.gens)
	idx := h.Index
	switch {
	case idx < -1 || idx >= n:
		refuse(w, http.StatusBadRequest, "shard index %d: out of range: the run has %d generators (0 to %d)", idx, n, n-1)
		return
	case idx >= 0 && m.gens[idx] != nil:
		g := m.gens[idx]
		refuse(w, http.StatusConflict, "shard %d is taken by %s (%s)", idx, g.host, g.addr)
		return
	case idx == -1:
		idx = slices.Index(m.gens, nil)
		if idx < 0 {
			refuse(w, http.StatusConflict, "all %d generators are registered", n)
			return
		}
	}
	g := &generator{id: hex.EncodeToString(id), host: host, addr: remoteHost(r), index: idx, lastSeen: time.Now()}
	m.gens[idx], m.byID[g.id] = g, g
	m.logf("generator %d/%d registered: %s (%s)", idx, n, g.host, g.addr)
	if !slices.Contains(m.gens, nil) {
		close(m.registered)
	}
	reply(w, Welcome{ID: g.id, Index: idx, Count: n, ManagerTime: time.Now(), MaxClockOffset: m.opts.MaxClockOffset})
}

func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// withGenerator resolves GeneratorHeader to a registered generator and
// marks it seen.
func (m *Manager) withGenerator(h func(http.ResponseWriter, *http.Request, *generator)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		g := m.byID[r.Header.Get(GeneratorHeader)]
		if g != nil {
			g.lastSeen = time.Now()
		}
		m.mu.Unlock()
		if g == nil {
			refuse(w, http.StatusForbidden, "unknown generator: register first (%s)", RegisterPath)
			return
		}
		h(w, r, g)
	}
}

// nextStep answers with the first step after ?after=SEQ, holding the
// request up to PollWait for it (204 when none came).
func (m *Manager) nextStep(w http.ResponseWriter, r *http.Request, g *generator) {
	after, err := strconv.Atoi(r.URL.Query().Get("after"))
	if err != nil || after < 0 {
		refuse(w, http.StatusBadRequest, "after=%q: want the last step's number (0 before the first)", r.URL.Query().Get("after"))
		return
	}
	timer := time.NewTimer(m.opts.PollWait)
	defer timer.Stop()
	for {
		m.mu.Lock()
		g.lastSeen = time.Now()
		var s *Step
		switch {
		case m.step != nil && m.step.step.Seq > after:
			st := m.step.step
			st.Index, st.Count = g.index, len(m.gens)
			s = &st
		case m.done != nil:
			d := *m.done
			d.Index, d.Count = g.index, len(m.gens)
			g.sawDone = true
			s = &d
		}
		changed := m.changed
		m.mu.Unlock()
		if s != nil {
			reply(w, s)
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (m *Manager) beat(w http.ResponseWriter, r *http.Request, g *generator) {
	m.mu.Lock()
	stop := m.step != nil && m.step.stop
	m.mu.Unlock()
	reply(w, Beat{Stop: stop})
}

// stepOf returns the current step when ?step= names it.
func (m *Manager) stepOf(w http.ResponseWriter, r *http.Request) (*stepState, bool) {
	seq, err := strconv.Atoi(r.URL.Query().Get("step"))
	if err != nil || seq < 0 {
		refuse(w, http.StatusBadRequest, "step=%q: want a step number", r.URL.Query().Get("step"))
		return nil, false
	}
	if seq == 0 {
		return nil, true
	}
	if m.step == nil || m.step.step.Seq != seq {
		refuse(w, http.StatusConflict, "step %d is not the step under way", seq)
		return nil, false
	}
	return m.step, true
}

func (m *Manager) result(w http.ResponseWriter, r *http.Request, g *generator) {
	run, err := report.ReadJSON(r.Body)
	if err != nil {
		refuse(w, http.StatusBadRequest, "%v", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.stepOf(w, r)
	if !ok {
		return
	}
	if st == nil {
		refuse(w, http.StatusBadRequest, "a report needs the step it is of (step=N)")
		return
	}
	if why := checkShard(run, st.step, g.index, len(m.gens)); why != "" {
		refuse(w, http.StatusBadRequest, "%s", why)
		return
	}
	if st.results[g.index] != nil || st.failures[g.index] != "" {
		refuse(w, http.StatusConflict, "shard %d already reported step %d", g.index, st.step.Seq)
		return
	}
	st.results[g.index] = run
	m.logf("shard %d/%d (%s) reported step %d", g.index, len(m.gens), g.host, st.step.Seq)
	st.signal()
	w.WriteHeader(http.StatusNoContent)
}

// checkShard says what makes run not shard index/count of step ("": it
// is).
func checkShard(run *report.Run, step Step, index, count int) string {
	s := run.Shard
	switch {
	case s == nil:
		return "the report is not a shard's (no \"shard\")"
	case s.Index != index || s.Count != count:
		return fmt.Sprintf("the report is of shard %d/%d, this generator runs %d/%d", s.Index, s.Count, index, count)
	case !s.StartAt.Equal(step.StartAt):
		return fmt.Sprintf("the report starts at %s, step %d at %s", s.StartAt.Format(time.RFC3339Nano), step.Seq, step.StartAt.Format(time.RFC3339Nano))
	case !s.ExternalSink:
		return "the report's remote deliveries were not left to the manager's sink"
	}
	return ""
}

func (m *Manager) fail(w http.ResponseWriter, r *http.Request, g *generator) {
	var f Failure
	if err := decodeStrict(r.Body, maxRequestBytes, &f); err != nil {
		refuse(w, http.StatusBadRequest, "failure: %v", err)
		return
	}
	why := strings.TrimSpace(f.Error)
	if why == "" {
		why = "failed without saying why"
	}
	if len(why) > 2000 {
		why = why[:2000]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.stepOf(w, r)
	if !ok {
		return
	}
	m.logf("shard %d/%d (%s) failed: %s", g.index, len(m.gens), g.host, why)
	if st == nil {
		g.failed = why
	} else if st.results[g.index] == nil && st.failures[g.index] == "" {
		st.failures[g.index] = why
		st.signal()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (st *stepState) signal() {
	close(st.changed)
	st.changed = make(chan struct{})
}

// broadcast wakes the step polls; m.mu held.
func (m *Manager) broadcast() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// ShardFailure is one shard that did not deliver a step's report.
type ShardFailure struct {
	Index int
	Host  string // "" when it never registered
	Why   string
}

// ShardsError is a step (0: the registration) that some shards did not
// carry out: the run is no result, never a smaller one.
type ShardsError struct {
	Step   int
	Count  int
	Shards []ShardFailure
}

func (e *ShardsError) Error() string {
	var parts []string
	for _, s := range e.Shards {
		who := fmt.Sprintf("shard %d/%d", s.Index, e.Count)
		if s.Host != "" {
			who += " (" + s.Host + ")"
		}
		parts = append(parts, who+": "+s.Why)
	}
	what := "the generators"
	if e.Step > 0 {
		what = fmt.Sprintf("step %d", e.Step)
	}
	return fmt.Sprintf("%s: %s", what, strings.Join(parts, "; "))
}

// WaitRegistered waits until all N generators have registered, or
// RegisterTimeout has passed, or one has failed or gone silent: then a
// *ShardsError names the shards missing.
func (m *Manager) WaitRegistered(ctx context.Context) error {
	deadline := time.Now().Add(m.opts.RegisterTimeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := m.registrationProblem(deadline); err != nil {
			return err
		}
		select {
		case <-m.registered:
			if err := m.registrationProblem(time.Time{}); err != nil {
				return err
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// registrationProblem is the shards that failed or went silent, and with
// a deadline passed, those that never registered.
func (m *Manager) registrationProblem(deadline time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	e := &ShardsError{Count: len(m.gens)}
	for i, g := range m.gens {
		switch {
		case g == nil && !deadline.IsZero() && now.After(deadline):
			e.Shards = append(e.Shards, ShardFailure{Index: i, Why: fmt.Sprintf("never registered within %v", m.opts.RegisterTimeout)})
		case g == nil:
		case g.failed != "":
			e.Shards = append(e.Shards, ShardFailure{Index: i, Host: g.host, Why: g.failed})
		case now.Sub(g.lastSeen) > m.opts.SilenceTimeout:
			e.Shards = append(e.Shards, ShardFailure{Index: i, Host: g.host, Why: fmt.Sprintf("went silent for %v after registering (it died or lost the network)", m.opts.SilenceTimeout)})
		}
	}
	if len(e.Shards) > 0 {
		return e
	}
	return nil
}

// Run carries out one step of cfg across the generators (the
// campaign.RunFunc of a managed campaign): it waits for the registrations
// (the first time), starts the step's sink, gives the step out with a
// start instant StartDelay ahead, watches the shards (stop asks them to
// end their arrivals; kill abandons the step), waits for the remote
// deliveries still on their way to the sink, and returns the shards'
// reports reconciled against the sink and merged. A shard that fails,
// goes silent or misses its deadline fails the step with a
// *ShardsError naming it.
func (m *Manager) Run(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
	if err := m.WaitRegistered(kill); err != nil {
		return nil, err
	}
	body, hash, err := EncodeConfig(cfg)
	if err != nil {
		return nil, err
	}
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	limits := compliance.RulesFor(plan).Limits()
	deliveryLimit := max(limits[measure.DeliveryLocal], limits[measure.DeliveryRemote])
	var sink StepSink
	if m.opts.StartSink != nil {
		if sink, err = m.opts.StartSink(cfg); err != nil {
			return nil, fmt.Errorf("sink: %w", err)
		}
		defer sink.Close()
	}
	start := time.Now().Add(m.opts.StartDelay).Truncate(time.Millisecond)
	win := cfg.Phases.Window(start)
	n := len(m.gens)
	m.mu.Lock()
	m.seq++
	st := &stepState{step: Step{Seq: m.seq, Config: body, File: cfg.File, ConfigHash: hash, StartAt: start},
		deadline: win.RampdownEnd.Add(cfg.Phases.Settle.Duration + deliveryLimit + m.opts.ResultGrace),
		results:  make([]*report.Run, n), failures: make([]string, n), changed: make(chan struct{})}
	m.step = st
	m.broadcast()
	m.mu.Unlock()
	m.logf("step %d given to %d generators: starts at %s, reports due by %s", st.step.Seq, n,
		start.UTC().Format(time.RFC3339Nano), st.deadline.UTC().Format(time.RFC3339))

	runs, err := m.watch(stop, kill, st)
	if err != nil {
		return nil, err
	}
	var sr *delivery.SinkReport
	if sink != nil {
		if sr, err = m.awaitRemote(kill, sink, runs, time.Now().Add(cfg.Phases.Settle.Duration)); err != nil {
			return nil, err
		}
	}
	var merged *report.Run
	if sr != nil {
		merged, err = report.MergeWithSink(sr, runs...)
	} else {
		merged, err = report.Merge(runs...)
	}
	if err != nil {
		return nil, err
	}
	if sink != nil {
		merged.Target.Sink = sink.Addr()
		merged.Warnings = append(merged.Warnings, m.sinkWarnings(cfg, merged, sink.Addr())...)
	}
	merged.Shard = nil
	return merged, nil
}

// sinkWarnings name the likely fault when the server relayed little or
// nothing to the manager's sink: a sink on loopback while the generators
// (and so, likely, the server) are elsewhere, or the server's relay of the
// remote domain.
func (m *Manager) sinkWarnings(cfg *workload.Config, run *report.Run, addr string) []string {
	d := run.Delivery
	if d == nil || d.RemoteDeliveries == 0 || 2*d.RelayedRemote >= d.RemoteDeliveries {
		return nil
	}
	var w []string
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		m.mu.Lock()
		var remote []string
		for _, g := range m.gens {
			if g != nil {
				if gip := net.ParseIP(g.addr); gip != nil && !gip.IsLoopback() {
					remote = append(remote, g.addr)
				}
			}
		}
		m.mu.Unlock()
		if len(remote) > 0 {
			w = append(w, fmt.Sprintf("diagnosis: the manager's sink listens on %s (loopback), while the generators came from %s: a server on another host cannot reach it; set sink.listen to an address of the manager's host the server can reach", addr, strings.Join(remote, ", ")))
		}
	}
	w = append(w, fmt.Sprintf("diagnosis: the server accepted %d deliveries for the remote domain and the manager's sink at %s received %d: check the server's relay of users.remote_domain (%q) to that address (docs/real-server.md)",
		d.RemoteDeliveries, addr, d.RelayedRemote, cfg.Users.RemoteDomain))
	return w
}

// watch waits until every shard of st has reported or failed. Stop is
// passed on (the shards' next heartbeat ends their arrivals); kill
// abandons the step.
func (m *Manager) watch(stop, kill context.Context, st *stepState) ([]*report.Run, error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	stopSeen := false
	for {
		m.mu.Lock()
		if stop.Err() != nil && !stopSeen {
			stopSeen, st.stop = true, true
			m.logf("stopping: the shards end their arrivals at their next heartbeat")
		}
		now := time.Now()
		complete := true
		var failed []ShardFailure
		for i, g := range m.gens {
			switch {
			case st.results[i] != nil:
				continue
			case st.failures[i] != "":
			case now.After(st.deadline):
				st.failures[i] = fmt.Sprintf("sent no report by its deadline %s", st.deadline.UTC().Format(time.RFC3339))
			case now.Sub(g.lastSeen) > m.opts.SilenceTimeout:
				st.failures[i] = fmt.Sprintf("went silent for %v during the step (it died or lost the network)", m.opts.SilenceTimeout)
			default:
				complete = false
				continue
			}
			failed = append(failed, ShardFailure{Index: i, Host: g.host, Why: st.failures[i]})
			// It takes no further step: the later steps of a campaign fail
			// at once, naming it, instead of waiting for it.
			g.failed = fmt.Sprintf("failed step %d: %s", st.step.Seq, st.failures[i])
		}
		if len(failed) > 0 {
			// The others end their arrivals; what they send is ignored.
			st.stop = true
			m.mu.Unlock()
			return nil, &ShardsError{Step: st.step.Seq, Count: len(m.gens), Shards: failed}
		}
		changed := st.changed
		m.mu.Unlock()
		if complete {
			return slices.Clone(st.results), nil
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-kill.Done():
			m.mu.Lock()
			st.stop = true
			m.mu.Unlock()
			return nil, kill.Err()
		}
	}
}

// awaitRemote waits until every remote delivery the shards left pending
// has arrived at the sink, or until deadline, and returns the sink's
// record then.
func (m *Manager) awaitRemote(ctx context.Context, sink StepSink, runs []*report.Run, deadline time.Time) (*delivery.SinkReport, error) {
	for {
		sr, err := sink.Report()
		if err != nil {
			return nil, fmt.Errorf("sink: %w", err)
		}
		missing := int64(0)
		for _, r := range runs {
			if r.RemotePending != nil {
				missing += delivery.ReconcileSink(r.RemotePending, sr.Arrivals, nil).LostRemote
			}
		}
		if missing == 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			if missing > 0 {
				m.logf("%d remote deliveries have not reached the sink by the end of settle", missing)
			}
			return sr, nil
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// Finish gives the generators the end with verdict, and waits until each
// live one has seen it or wait has passed.
func (m *Manager) Finish(verdict string, wait time.Duration) {
	m.mu.Lock()
	m.seq++
	m.done = &Step{Seq: m.seq, Done: true, Verdict: verdict}
	if m.step != nil {
		m.step.stop = true
	}
	m.broadcast()
	m.mu.Unlock()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		m.mu.Lock()
		all := true
		for _, g := range m.gens {
			if g != nil && g.failed == "" && !g.sawDone && time.Since(g.lastSeen) < m.opts.SilenceTimeout {
				all = false
			}
		}
		m.mu.Unlock()
		if all {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// EncodeConfig is cfg as a step carries it: JSON without the users'
// password (a generator takes its own, or users.password_env's) or file
// name, and the SHA-256 of that JSON, against which the generator checks
// its decoding. It doesn't perform I/O.
func EncodeConfig(cfg *workload.Config) (json.RawMessage, string, error) {
	c := *cfg
	c.Users.Password = ""
	c.File = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, "", fmt.Errorf("encode the workload config: %w", err)
	}
	return b, configDigest(b), nil
}

// configDigest is the hex SHA-256 of a config's JSON (EncodeConfig).
func configDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ConfigDigest is the digest of cfg as EncodeConfig carries it: what
// Hello.ConfigHash and Options.ConfigHash hold.
func ConfigDigest(cfg *workload.Config) (string, error) {
	_, h, err := EncodeConfig(cfg)
	return h, err
}
