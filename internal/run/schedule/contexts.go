package schedule

import "context"

// RunContexts are a run's two contexts, derived once, from its caller's
// stop and kill, by NewRunContexts (as k6's executors derive theirs from
// one helper, lib/executor's getDurationContexts):
//
//   - Arrivals is done when no new work may start: the caller's stop is
//     done (the first Ctrl-C), EndArrivals was called (the end of the
//     window, a run abandoned), or Sessions is done. Schedulers admit
//     nothing after it; running sessions go on.
//   - Sessions is done when running work must end now: the caller's kill
//     is done (the second Ctrl-C) or CutSessions was called (a run
//     abandoned). Everything a session does takes it; so does what settles
//     the run after its sessions (the wait for deliveries). The ramp-down's
//     grace is the Runner's to cut, in a context of its own below this one.
//
// Sessions done implies Arrivals done, never the reverse: stopping is
// graceful, cutting is not. Both are done once release (from
// NewRunContexts) is called. EndArrivals and CutSessions are safe for
// concurrent use, more than once, before or during the run.
type RunContexts struct {
	Arrivals context.Context
	Sessions context.Context

	endArrivals, cutSessions context.CancelFunc
}

// NewRunContexts derives a run's contexts from stop and kill (see
// RunContexts); stop may be kill when the caller has one context. release
// frees what they hold; call it when the run is over.
func NewRunContexts(stop, kill context.Context) (rc *RunContexts, release func()) {
	sessions, cut := context.WithCancel(kill)
	arrivals, end := context.WithCancel(sessions)
	unhook := context.AfterFunc(stop, end)
	if stop.Err() != nil {
		end() // now, not in AfterFunc's goroutine: a run stopped before it began starts nothing
	}
	return &RunContexts{Arrivals: arrivals, Sessions: sessions, endArrivals: end, cutSessions: cut},
		func() { unhook(); end(); cut() }
}

// EndArrivals ends the arrivals: Arrivals is done from now on.
func (rc *RunContexts) EndArrivals() { rc.endArrivals() }

// CutSessions cuts running work: Sessions (and so Arrivals) is done from
// now on.
func (rc *RunContexts) CutSessions() { rc.cutSessions() }

// Stopped reports whether the arrivals were ended (stop, EndArrivals, or a
// cut) rather than run to the window's end: schedulers end at the window's
// end on their own, without ending Arrivals.
func (rc *RunContexts) Stopped() bool { return rc.Arrivals.Err() != nil }
