// Package session runs the sessions of a workload: the five session
// scripts and the inbound mail stream, the pool of users, and the Runner
// that drives them from the schedules through warm-up, measurement and
// ramp-down, reporting every timed operation to its Observer.
package session

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// Runner drives one run: the session arrivals and the inbound mail stream,
// through warm-up, measurement and ramp-down.
type Runner struct {
	Config *workload.Config
	// Plan is the plan of Config the run carries out (workload.NewPlan):
	// its session mix and its target rate; the Runner works out neither
	// again.
	Plan  *workload.Plan
	Users []workload.User
	// Groups are [population]'s groups, and AllUsers the users their
	// First and Count index (Users then holds the spec users). The Runner
	// delivers each group's received mail (inbound, one recipient of the
	// group each) and submits its users' sent mail (Client send), both
	// open-model streams at the profiles' rates. Nil without [population].
	Groups   []workload.Group
	AllUsers []workload.User
	// IMAP and SMTP are the client settings; their Observer is replaced by
	// the Runner's Observer.
	IMAP imapclient.Config
	SMTP smtpclient.Config
	// Inbound is where the inbound mail stream delivers; zero Address: SMTP.
	Inbound smtpclient.Config
	Gen     *message.Generator
	// Observer receives every timed operation of every phase; the recorder
	// decides which phase an observation belongs to from its start time.
	Observer measure.Observer
	// OnSent is told of every message a server accepted (delivery ledger).
	OnSent func(measure.Submission)
	// OnSeen is told of the messages a session saw in a user's INBOX.
	OnSeen func(user string, infos []delivery.MessageInfo, at time.Time)
	// OnBodyRead is told of every body a read session fetched; a non-nil
	// error (a corrupted body) is recorded as an Integrity error.
	OnBodyRead func(user string, b delivery.BodyInfo) error
	// OnRejected is told of every message the server refused at submission.
	OnRejected func()
	// OnDeleted is told of the INBOX messages a cleanup session is about
	// to delete (learned by an untimed FETCH before each STORE).
	OnDeleted func(user string, infos []delivery.MessageInfo)
	// Window is the run's timeline, computed once by the caller and shared
	// with the recorder; its Start is the arrivals' clock origin. Zero:
	// the configured phases from the moment Run is called.
	Window workload.Window
	// RunID tags this run's message ids; 0 picks one from the clock.
	RunID uint32
	// Shard, when sharded, keeps this generator's share of the arrivals
	// (both streams) and of the users (see schedule.Shard); recipients
	// stay all of Users.
	Shard schedule.Shard
	// Progress, when set, is called about once a second with the counts so far.
	Progress func(RunProgress)
}

// RunProgress is a snapshot for progress displays. The Runner fills in
// its schedule's figures; the run that owns the Runner adds what it
// observes (the fields so marked).
type RunProgress struct {
	// Elapsed is the time since the run's start; Total the run's length to
	// the end of ramp-down. In settle (filled by the run) Elapsed is the
	// time into the settle and Total its longest length.
	Elapsed, Total time.Duration
	Phase          workload.Phase
	Active         int64
	Sessions       schedule.Counts
	// PerHour is the session rate achieved so far in the measurement
	// window (sessions started ÷ time into the window; 0 before it);
	// TargetPerHour the rate asked of this generator (its shard's share).
	PerHour, TargetPerHour float64
	// Connected and ConnectedTarget are the connected clients of
	// [clients] held now and asked for; the run fills them in.
	Connected, ConnectedTarget int64
	// Operations and Errors (by class) count every timed operation that
	// ended since the start, of every phase; Worst is the function whose
	// p95 stood highest against its limit over the last few seconds (nil:
	// none yet). The run fills them in.
	Operations int64
	Errors     map[measure.ErrorClass]int64
	Worst      *WorstP95
	// Awaiting is the deliveries not found yet, in settle (the run's).
	Awaiting int64
}

// WorstP95 is a function's recent 95th percentile beside its limit.
type WorstP95 struct {
	Function   measure.Function
	P95, Limit time.Duration
}

// RunResult is what the Runner measured besides the operation timings.
type RunResult struct {
	Start        time.Time // the run's clock origin
	MeasureStart time.Time
	MeasureEnd   time.Time
	Ended        time.Time
	Sessions     schedule.Counts // arrivals due in the measurement window
	Inbound      schedule.Counts
	// ClientSends are the population's sent messages (none without it),
	// due at ClientSendsPerHour (this shard's share).
	ClientSends        schedule.Counts
	ClientSendsPerHour float64
	SessionsByKind     map[workload.SessionKind]int64 // started in the measurement window
	SessionsFailed     int64                          // ended early by an error (measurement window)
	// SessionsLoggedIn connected and logged in (their first step
	// succeeded); SessionsCompleted ran every step. Measurement window.
	SessionsLoggedIn, SessionsCompleted int64
	// SessionLateness and InboundLateness are how late the scheduler handed
	// out each arrival due in the measurement window (schedule.Scheduler.Lateness).
	SessionLateness, InboundLateness *hdrhistogram.Histogram
	Stopped                          bool      // stop was requested before the end
	StopAt                           time.Time // when arrivals ended (end of measurement, or the stop)
	Users                            int       // simulated users
	CutSessions                      int64     // sessions mailbench cut: still running at the end of ramp-down, or killed
	// SessionTime is the summed wall time of the sessions started in the
	// measurement window, from hand-out to return: with Sessions.Started
	// it gives the mean session length the server allowed.
	SessionTime time.Duration
	// Shards is how many shards the run is split into (1: a whole run).
	Shards int
}

// Run runs the workload in rc: its arrivals until the window's end or
// rc.Arrivals (the graceful end: no new arrivals, then the ramp-down
// grace), its sessions until the grace is over or rc.Sessions (cut at
// once). The run is marked Stopped when rc's arrivals ended before the
// window's. Call it once.
//
// It builds the run (newRun: the sessions' environment and the three
// open-model schedulers, each arrival's work decided by its Admit) and
// drains it (drain: the schedulers until the window's end, then the
// ramp-down).
func (r *Runner) Run(rc *schedule.RunContexts) (*RunResult, error) {
	run, err := r.newRun(rc)
	if err != nil {
		return nil, err
	}
	defer run.cut()
	return run.drain(rc), nil
}

// waitUntil returns at t, or earlier when ctx is done.
func waitUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 || ctx.Err() != nil {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// NewRunID returns a run id for message ids, from the clock: runs of the
// same seed must not confuse each other's mail on a server that keeps it.
func NewRunID() uint32 {
	return rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6d61696c)).Uint32() | 1
}

// groupRates are the groups' received and sent messages per hour (zero
// for spec groups).
func groupRates(groups []workload.Group, sessionsPerUserHour float64) (received, sent []float64) {
	for _, g := range groups {
		r := g.Rates(sessionsPerUserHour)
		received = append(received, r.ReceivedPerHour)
		sent = append(sent, r.SentPerHour)
	}
	return received, sent
}

func sum(fs []float64) float64 {
	t := 0.0
	for _, f := range fs {
		t += f
	}
	return t
}

// pickGroup draws an index of weights in proportion, after a first share
// of rest that is nobody's (-1); -1 too when every weight is zero.
func pickGroup(rng *rand.Rand, rest float64, weights []float64) int {
	total := rest + sum(weights)
	if total <= 0 {
		return -1
	}
	x := rng.Float64() * total
	if x < rest {
		return -1
	}
	x -= rest
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	for i := len(weights) - 1; i >= 0; i-- {
		if weights[i] > 0 {
			return i
		}
	}
	return -1
}
