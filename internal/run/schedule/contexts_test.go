package schedule

import (
	"context"
	"testing"
)

// TestRunContexts: which of the caller's signals and the run's own calls
// end the arrivals, which cut the sessions; a cut always ends the
// arrivals, a stop never cuts; a stop done before the run ends the
// arrivals at once, not in a goroutine later.
func TestRunContexts(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		do                        func(stop, kill context.CancelFunc, rc *RunContexts)
		arrivalsDone, cutSessions bool
	}{
		{"nothing", func(_, _ context.CancelFunc, _ *RunContexts) {}, false, false},
		{"caller's stop", func(stop, _ context.CancelFunc, _ *RunContexts) { stop() }, true, false},
		{"caller's kill", func(_, kill context.CancelFunc, _ *RunContexts) { kill() }, true, true},
		{"EndArrivals", func(_, _ context.CancelFunc, rc *RunContexts) { rc.EndArrivals(); rc.EndArrivals() }, true, false},
		{"CutSessions", func(_, _ context.CancelFunc, rc *RunContexts) { rc.CutSessions(); rc.CutSessions() }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop, stopNow := context.WithCancel(context.Background())
			kill, killNow := context.WithCancel(context.Background())
			defer stopNow()
			defer killNow()
			rc, release := NewRunContexts(stop, kill)
			defer release()
			tc.do(stopNow, killNow, rc)
			if tc.arrivalsDone {
				<-rc.Arrivals.Done() // a stop reaches the arrivals through AfterFunc's goroutine
			}
			if tc.cutSessions {
				<-rc.Sessions.Done()
			}
			if got := rc.Arrivals.Err() != nil; got != tc.arrivalsDone {
				t.Errorf("arrivals done %v, want %v", got, tc.arrivalsDone)
			}
			if got := rc.Sessions.Err() != nil; got != tc.cutSessions {
				t.Errorf("sessions cut %v, want %v", got, tc.cutSessions)
			}
			if rc.Stopped() != tc.arrivalsDone {
				t.Errorf("Stopped() %v, want %v", rc.Stopped(), tc.arrivalsDone)
			}
		})
	}
}

// TestRunContextsStoppedBefore: a run whose stop is done before its
// contexts are derived has its arrivals ended on return, and release
// ends both contexts.
func TestRunContextsStoppedBefore(t *testing.T) {
	stop, stopNow := context.WithCancel(context.Background())
	stopNow()
	rc, release := NewRunContexts(stop, context.Background())
	if rc.Arrivals.Err() == nil || rc.Sessions.Err() != nil {
		t.Fatalf("arrivals err %v, sessions err %v: want the arrivals ended at once, the sessions not", rc.Arrivals.Err(), rc.Sessions.Err())
	}
	release()
	if rc.Sessions.Err() == nil {
		t.Error("release left the sessions' context running")
	}
}
