package session

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// silentServer accepts every connection on addr and never answers: a
// session hangs on its greeting until its deadline or until it is cut.
func silentServer(t *testing.T, nw *memnet.Network, addr string) {
	ln, err := nw.Listen(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
}

// hungRunner is a Runner of the quick workload at 2 sessions a second,
// at most 3 at once, no inbound mail and no warm-up, against servers that
// never answer (sessions end only when mailbench cuts them). observe, when
// set, receives every timed operation.
func hungRunner(t *testing.T, observe func(measure.Observation)) *Runner {
	cfg := testconfig.Quick(t, 10*time.Second)
	cfg.Target.Embedded = false
	cfg.Load.SessionsPerHour = 7200 // 2 a second: about 20 in the window
	cfg.Load.MaxConcurrent = 3
	cfg.Load.InboundPerSession = 0
	cfg.Load.OpTimeout.Duration = time.Minute // longer than the run: only the cut ends them
	cfg.Phases.Warmup.Duration = 0
	cfg.Phases.Rampdown.Duration = 2 * time.Second
	nw := memnet.New()
	silentServer(t, nw, "imap.test:143")
	silentServer(t, nw, "smtp.test:25")
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	gen, err := message.NewGenerator(cfg.Seed, []int{1024})
	if err != nil {
		t.Fatal(err)
	}
	// The plan of the same run with a deadline within the ramp-down, which
	// validation asks for (these sessions' deadline is longer on purpose).
	planned := *cfg
	planned.Target.IMAP.Address, planned.Target.SMTP.Address = "imap.test:143", "smtp.test:25"
	planned.Load.OpTimeout.Duration = cfg.Phases.Rampdown.Duration
	plan, err := workload.NewPlan(&planned)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{
		Config: cfg, Plan: plan, Users: users, Gen: gen, RunID: 1,
		IMAP: imapclient.Config{Address: "imap.test:143", DialContext: nw.DialContext, Timeout: time.Minute},
		SMTP: smtpclient.Config{Address: "smtp.test:25", DialContext: nw.DialContext, Timeout: time.Minute},
	}
	if observe != nil {
		r.Observer = measure.ObserverFunc(observe)
	}
	return r
}

// TestRunnerAccounting: against a server that never answers, with a cap of
// 3 concurrent sessions, the Runner starts 3 sessions and counts every
// later arrival of the window as dropped at the cap (none waits for a
// free slot: the open model); the 3 hung sessions are cut at the end of
// ramp-down, counted as cut and not as failed; nothing is late; the
// arrivals follow the schedule, not the completions.
func TestRunnerAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var timeouts, others int
		r := hungRunner(t, func(o measure.Observation) {
			mu.Lock()
			defer mu.Unlock()
			if o.Class == measure.Timeout {
				timeouts++
			} else if o.Class != measure.Cancelled {
				others++
			}
		})
		start := time.Now()
		res, err := runIn(r, context.Background(), context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := res.Sessions
		if c.Scheduled < 10 || c.Started != 3 || c.Dropped != c.Scheduled-3 || c.DroppedAtCap != c.Dropped || c.Late != 0 {
			t.Errorf("sessions %+v: want 3 started, every other arrival dropped at the cap, none late", c)
		}
		if res.CutSessions != 3 || res.SessionsFailed != 0 || res.SessionsCompleted != 0 || res.SessionsLoggedIn != 0 {
			t.Errorf("cut %d, failed %d, completed %d, logged in %d: want the 3 hung sessions cut, none failed", res.CutSessions, res.SessionsFailed, res.SessionsCompleted, res.SessionsLoggedIn)
		}
		if res.Stopped {
			t.Error("a run that was not stopped says it was")
		}
		if got, want := res.Ended.Sub(start), 12*time.Second; got < want || got > want+time.Second {
			t.Errorf("the run took %v, want the window and the ramp-down: %v", got, want)
		}
		if timeouts != 0 || others != 0 {
			t.Errorf("%d timeouts and %d other failures observed: the cut is mailbench's, not the server's", timeouts, others)
		}
	})
}

// TestRunnerStop: the caller's stop ends the arrivals at once and drains;
// the run says it was stopped and when, and counts only the arrivals due
// before the stop. The caller's kill instead cuts the running sessions at
// once, before the ramp-down's grace, and the run says it was stopped too.
func TestRunnerStop(t *testing.T) {
	for _, viaKill := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			r := hungRunner(t, nil)
			kill, killNow := context.WithCancel(context.Background())
			defer killNow()
			stop, stopNow := context.WithCancel(context.Background())
			defer stopNow()
			start := time.Now()
			time.AfterFunc(4*time.Second, func() {
				if viaKill {
					killNow()
				} else {
					stopNow()
				}
			})
			res, err := runIn(r, stop, kill)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Stopped || res.StopAt.Sub(start) != 4*time.Second {
				t.Errorf("stopped %v at %v, want stopped at 4s", res.Stopped, res.StopAt.Sub(start))
			}
			if s := res.Sessions.Scheduled; s < 3 || s > 16 {
				t.Errorf("%d arrivals scheduled: want those of the first 4 s only", s)
			}
			ended := res.Ended.Sub(start)
			if want := map[bool]time.Duration{false: 6 * time.Second, true: 4 * time.Second}[viaKill]; ended != want {
				t.Errorf("kill %v: the run ended at %v, want %v (the ramp-down's grace only without kill)", viaKill, ended, want)
			}
			if started := res.Sessions.Started; started == 0 || res.CutSessions != started {
				t.Errorf("kill %v: cut %d sessions of %d started: want every hung one cut", viaKill, res.CutSessions, started)
			}
		})
	}
}

// TestRunnerStopBeforeRun: a Runner whose stop is done before Run (a
// Ctrl-C during set-up) starts no session and says it was stopped.
func TestRunnerStopBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := hungRunner(t, nil)
		stop, stopNow := context.WithCancel(context.Background())
		stopNow()
		start := time.Now()
		res, err := runIn(r, stop, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Stopped || res.Sessions.Started != 0 || res.Inbound.Started != 0 {
			t.Errorf("stopped %v, %d sessions and %d inbound started: want stopped, none started", res.Stopped, res.Sessions.Started, res.Inbound.Started)
		}
		if d := res.Ended.Sub(start); d != 0 {
			t.Errorf("the run took %v, want none", d)
		}
	})
}

// runIn runs r in the contexts derived from stop and kill, as a run does.
func runIn(r *Runner, stop, kill context.Context) (*RunResult, error) {
	rc, release := schedule.NewRunContexts(stop, kill)
	defer release()
	return r.Run(rc)
}
