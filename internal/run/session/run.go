package session

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// run is one Runner.Run: its window, its sessions' environment and
// context, the three schedulers that hand its arrivals out (SPEC's
// sessions, the inbound mail, the population's sent mail), and the
// counts the sessions keep while it drains.
type run struct {
	r   *Runner
	env *sessionEnv
	win workload.Window
	// warm and end are the measurement window's offsets from win.Start.
	warm, end time.Duration
	res       *RunResult
	pool      *userPool

	// sessionCtx is cut at the end of the ramp-down's grace (cut), or at
	// once with the run's Sessions context.
	sessionCtx context.Context
	cut        context.CancelFunc

	sessions, inbound, sends *schedule.Scheduler

	mu sync.Mutex // res.SessionsByKind
	// cutByUs counts the sessions (of both streams, any phase) that
	// mailbench itself ended: cut at the end of ramp-down, or by kill.
	failed, loggedIn, completed, sessionNanos, cutByUs atomic.Int64
}

// newRun builds the run of r in rc: the sessions' environment, the
// window, and the schedulers. It starts nothing.
func (r *Runner) newRun(rc *schedule.RunContexts) (*run, error) {
	cfg := r.Config
	if r.Plan == nil {
		return nil, fmt.Errorf("no plan")
	}
	if len(r.Users) == 0 {
		return nil, fmt.Errorf("no users")
	}
	if r.Shard.Users(len(r.Users)) == 0 {
		return nil, fmt.Errorf("shard %v: fewer users (%d) than shards", r.Shard, len(r.Users))
	}
	sizes, err := workload.SizeDistribution(cfg.Messages.Sizes)
	if err != nil {
		return nil, err
	}
	rcpts, err := newRecipientPicker(cfg.Messages, cfg.Users.RemoteDomain)
	if err != nil {
		return nil, err
	}
	env := &sessionEnv{
		cfg: cfg, users: r.Users, imap: r.IMAP, smtp: r.SMTP, inboundTo: r.Inbound, gen: r.Gen,
		runID: r.RunID, sizes: sizes, rcpts: rcpts,
		onSent: r.OnSent, onSeen: r.OnSeen, onBodyRead: r.OnBodyRead, onRejected: r.OnRejected, onDeleted: r.OnDeleted,
	}
	if env.runID == 0 {
		env.runID = NewRunID()
	}
	env.folders = append(cfg.Mailboxes.Standard(), cfg.Mailboxes.Folders...)
	env.allUsers = r.Users
	if len(r.AllUsers) > 0 {
		env.allUsers = r.AllUsers
	}
	if r.Observer == nil {
		r.Observer = measure.Discard
	}
	if env.inboundTo.Address == "" {
		env.inboundTo = r.SMTP
	}
	env.imap.Observer, env.smtp.Observer, env.inboundTo.Observer, env.obs = r.Observer, r.Observer, r.Observer, r.Observer

	win := r.Window
	if win.Start.IsZero() {
		win = cfg.Phases.Window(time.Now())
	}
	u := &run{r: r, env: env, win: win, warm: win.Offset(win.MeasureStart), end: win.Offset(win.MeasureEnd),
		pool: newUserPool(r.Shard.Users(len(r.Users)))}
	u.res = &RunResult{Users: r.Shard.Users(len(r.Users)), Start: win.Start, MeasureStart: win.MeasureStart, MeasureEnd: win.MeasureEnd, SessionsByKind: map[workload.SessionKind]int64{}}
	u.sessionCtx, u.cut = context.WithCancel(rc.Sessions)

	mix, err := r.Plan.SessionMix()
	if err != nil {
		u.cut()
		return nil, err
	}
	u.sessions = u.sessionScheduler(mix)
	// Each group's mail has its user profile's sizes, else messages.sizes.
	groupSizes := make([]*workload.Weighted[int], len(r.Groups))
	for i, g := range r.Groups {
		groupSizes[i] = sizes
		if len(g.User.Sizes) > 0 {
			if groupSizes[i], err = workload.SizeDistribution(g.User.Sizes); err != nil {
				u.cut()
				return nil, err
			}
		}
	}
	received, sent := groupRates(r.Groups, cfg.Load.SessionsPerUserHour)
	u.inbound = u.inboundScheduler(received, groupSizes)
	u.sends = u.sendScheduler(sent, groupSizes)
	u.res.ClientSendsPerHour = sum(sent) / float64(max(r.Shard.Count, 1))
	return u, nil
}

// inWindow reports whether an arrival at offset off from the run's start
// falls in the measurement window: it is counted.
func (u *run) inWindow(off time.Duration) bool { return off >= u.warm && off < u.end }

// sessionScheduler hands out SPEC's sessions at the plan's rate, each of
// a type drawn from mix, for a user drawn from the shard's users.
func (u *run) sessionScheduler(mix *workload.Weighted[workload.SessionKind]) *schedule.Scheduler {
	r, cfg, env := u.r, u.r.Config, u.env
	return &schedule.Scheduler{
		Schedule:      schedule.NewArrivalSchedule(r.Plan.SessionsPerHour, cfg.ArrivalSeed(), 0).Partition(r.Shard),
		MaxConcurrent: cfg.Load.MaxConcurrent,
		LateTolerance: cfg.Load.LateTolerance.Duration,
		Counted:       u.inWindow,
		Admit: func(a schedule.Arrival) (func(), bool) {
			rng := sessionRand(cfg.ArrivalSeed(), 0, a.Index)
			kind := mix.Pick(rng)
			drawn := rng.IntN(len(r.Users))
			ui, ok := u.pool.acquire(r.Shard.Local(drawn, len(r.Users)))
			if !ok {
				return nil, false
			}
			counted := u.inWindow(a.Offset)
			if counted {
				u.mu.Lock()
				u.res.SessionsByKind[kind]++
				u.mu.Unlock()
			}
			return func() {
				ctx := u.sessionCtx
				defer u.pool.release(ui)
				in, err := env.run(ctx, kind, r.Users[r.Shard.User(ui)], r.Users[drawn], rng)
				if err != nil && ctx.Err() != nil {
					u.cutByUs.Add(1)
				}
				if !counted {
					return
				}
				u.sessionNanos.Add(int64(time.Since(a.Actual)))
				if in {
					u.loggedIn.Add(1)
				}
				switch {
				case err == nil:
					u.completed.Add(1)
				case ctx.Err() == nil: // not cut by mailbench
					u.failed.Add(1)
				}
			}, true
		},
	}
}

// inboundScheduler hands out the inbound stream: the spec sessions'
// background mail, and the mail the population's users receive (received
// per hour by group), one recipient of a group each, in the group's sizes.
func (u *run) inboundScheduler(received []float64, groupSizes []*workload.Weighted[int]) *schedule.Scheduler {
	r, cfg, env := u.r, u.r.Config, u.env
	specInbound := r.Plan.SessionsPerHour * cfg.Load.InboundPerSession
	return &schedule.Scheduler{
		Schedule:      schedule.NewArrivalSchedule(specInbound+sum(received), cfg.ArrivalSeed(), 1).Partition(r.Shard),
		MaxConcurrent: cfg.StreamMaxConcurrent(),
		LateTolerance: cfg.Load.LateTolerance.Duration,
		Counted:       u.inWindow,
		Admit: func(a schedule.Arrival) (func(), bool) {
			rng := sessionRand(cfg.ArrivalSeed(), 1, a.Index)
			var to workload.User
			var sz *workload.Weighted[int]
			if len(r.Groups) > 0 { // drawn only with a population: SPEC runs keep their draws
				if g := pickGroup(rng, specInbound, received); g >= 0 {
					to = env.allUsers[r.Groups[g].First+rng.IntN(r.Groups[g].Count)]
					sz = groupSizes[g]
				}
			}
			return func() {
				if _, err := env.runSized(u.sessionCtx, workload.Inbound, to, workload.User{}, rng, sz); err != nil && u.sessionCtx.Err() != nil {
					u.cutByUs.Add(1)
				}
			}, true
		},
	}
}

// sendScheduler hands out the population's sent mail (sent per hour by
// group): Client send, from a user of a group, in the group's sizes.
func (u *run) sendScheduler(sent []float64, groupSizes []*workload.Weighted[int]) *schedule.Scheduler {
	r, cfg, env := u.r, u.r.Config, u.env
	return &schedule.Scheduler{
		Schedule:      schedule.NewArrivalSchedule(sum(sent), cfg.ArrivalSeed(), 2).Partition(r.Shard),
		MaxConcurrent: cfg.StreamMaxConcurrent(),
		LateTolerance: cfg.Load.LateTolerance.Duration,
		Counted:       u.inWindow,
		Admit: func(a schedule.Arrival) (func(), bool) {
			rng := sessionRand(cfg.ArrivalSeed(), 2, a.Index)
			g := pickGroup(rng, 0, sent)
			if g < 0 {
				return nil, false
			}
			from := env.allUsers[r.Groups[g].First+rng.IntN(r.Groups[g].Count)]
			return func() {
				if err := env.clientSend(u.sessionCtx, from, rng, groupSizes[g]); err != nil && u.sessionCtx.Err() != nil {
					u.cutByUs.Add(1)
				}
			}, true
		},
	}
}

// drain runs the schedulers in rc until the window's end (or rc's
// arrivals end), then the ramp-down: no new sessions, and the running
// ones get the grace before they are cut. It returns what was counted.
func (u *run) drain(rc *schedule.RunContexts) *RunResult {
	r, win, res := u.r, u.win, u.res
	start, end := win.Start, u.end
	ramp := win.RampdownEnd.Sub(win.MeasureEnd)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); u.sessions.Run(rc.Arrivals, start, end) }()
	go func() { defer wg.Done(); u.inbound.Run(rc.Arrivals, start, end) }()
	go func() { defer wg.Done(); u.sends.Run(rc.Arrivals, start, end) }()
	stopProgress := u.progress(end + ramp)
	wg.Wait()
	// The schedulers return as soon as the next arrival falls after the
	// window; at a low rate that can be long before its end. The window
	// is the window: wait for its end (or the stop) before ramp-down.
	waitUntil(rc.Arrivals, win.MeasureEnd)
	res.StopAt = time.Now()
	res.Stopped = rc.Stopped()

	// Ramp-down: no new sessions; running ones get the grace period.
	drained := make(chan struct{})
	go func() { u.sessions.Wait(); u.inbound.Wait(); u.sends.Wait(); close(drained) }()
	grace := time.NewTimer(ramp)
	select {
	case <-drained:
	case <-grace.C:
		u.cut()
		<-drained
	case <-rc.Sessions.Done():
		u.cut()
		<-drained
	}
	// Counted by the sessions themselves: a kill during the window cuts
	// sessions that are gone before ramp-down begins.
	res.CutSessions = u.cutByUs.Load()
	grace.Stop()
	stopProgress()
	res.Ended = time.Now()
	res.Sessions = u.sessions.Counts()
	res.Inbound = u.inbound.Counts()
	res.ClientSends = u.sends.Counts()
	res.SessionsFailed = u.failed.Load()
	res.SessionTime = time.Duration(u.sessionNanos.Load())
	res.Shards = max(r.Shard.Count, 1)
	res.SessionsLoggedIn, res.SessionsCompleted = u.loggedIn.Load(), u.completed.Load()
	res.SessionLateness, res.InboundLateness = u.sessions.Lateness(), u.inbound.Lateness()
	return res
}

// progress calls the Runner's Progress about once a second, until the
// returned func is called; total is the run's length to the end of
// ramp-down. Without Progress it does nothing.
func (u *run) progress(total time.Duration) (stop func()) {
	r, win := u.r, u.win
	if r.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				now := time.Now()
				el, phase := now.Sub(win.Start), win.PhaseAt(now)
				counts := u.sessions.Counts()
				perHour := 0.0
				if in := now.Sub(win.MeasureStart); in >= time.Second && phase != workload.Warmup {
					in = min(in, win.MeasureEnd.Sub(win.MeasureStart))
					perHour = float64(counts.Started) / in.Hours()
				}
				r.Progress(RunProgress{Elapsed: el, Total: total, Phase: phase,
					Active: u.sessions.Active() + u.inbound.Active() + u.sends.Active(), Sessions: counts,
					PerHour: perHour, TargetPerHour: r.Plan.SessionsPerHour / float64(max(r.Shard.Count, 1))})
			}
		}
	}()
	return func() { close(done) }
}
