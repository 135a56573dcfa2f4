package demo

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Contention makes the target slower the busier it is, so that it has a
// known capacity: a server whose response time grows with concurrency, for
// tests of `mailbench size` and `certify`.
//
// The target counts its active sessions: IMAP connections from the
// greeting to their end, SMTP sessions from EHLO to their end (QUIT, the
// connection closing or a STARTTLS reset). Every command that has a
// latency knob (LatencyCommands: LOGIN, SELECT, LIST and LSUB, APPEND,
// FETCH, STORE, EXPUNGE and their UID forms, MAIL, RCPT, DATA) first waits
//
//	max(0, active − Knee) × Slope
//
// with active counted when the command arrives (its own session included),
// capped at Max, before any Options.Latency of the command. Below the knee
// nothing changes; above it every command waits, the longer the further
// above. With Slope above a compliance limit the knee is sharp: a command
// is within the limit exactly when at most Knee sessions were active, so a
// run's response-time rows fail once more than the rows' tolerance (5%) of
// its commands arrive above the knee. The waits are sleeps on the clock
// (time.Sleep semantics): inside testing/synctest they cost no real time.
// Close ends the waits early.
//
// A wait makes its session last longer, and so raises the concurrency that
// the next commands see: past the knee the load feeds on itself. With Max =
// Slope (a step: every command above the knee waits Slope, however far
// above) that feedback is bounded, and a target whose sessions fluctuate
// above the knee now and then comes back below it; with an unbounded
// slope one fluctuation can snowball into a collapse.
//
// The zero value (Slope 0) is off.
type Contention struct {
	// Knee is the number of active sessions the target serves without
	// delay; ≥ 0.
	Knee int
	// Slope is the extra wait per session above the knee; ≥ 0 (0: off).
	Slope time.Duration
	// Max caps a wait; 0: one minute (also the largest Max).
	Max time.Duration
}

// Delay is the wait of a command that arrives while active sessions
// (its own included) are in progress. It doesn't perform I/O.
func (c Contention) Delay(active int) time.Duration {
	if c.Slope <= 0 || active <= c.Knee {
		return 0
	}
	limit := c.Max
	if limit <= 0 || limit > maxLatency {
		limit = maxLatency
	}
	over := time.Duration(active - c.Knee)
	if over > limit/c.Slope {
		return limit
	}
	return over * c.Slope
}

// check validates c.
func (c Contention) check() error {
	if c.Knee < 0 || c.Slope < 0 || c.Max < 0 {
		return errors.New("target: contention: negative knee, slope or maximum")
	}
	if c.Max > maxLatency {
		return fmt.Errorf("target: contention: maximum %v above %v", c.Max, maxLatency)
	}
	return nil
}

// activity counts the target's active sessions.
type activity struct {
	active    atomic.Int64
	peak      atomic.Int64
	contended atomic.Int64 // commands that waited for Contention
}

// begin counts a session in; the returned func counts it out (once, however
// often it is called).
func (a *activity) begin() func() {
	n := a.active.Add(1)
	for {
		p := a.peak.Load()
		if n <= p || a.peak.CompareAndSwap(p, n) {
			break
		}
	}
	var once sync.Once
	return func() { once.Do(func() { a.active.Add(-1) }) }
}

// Active is the number of sessions in progress on the target (IMAP
// connections and SMTP sessions), as Contention counts them. It doesn't
// perform I/O.
func (t *Target) Active() int { return int(t.act.active.Load()) }

// contentionDelay waits Options.Contention's delay for the current number
// of active sessions; Close ends the wait.
func (t *Target) contentionDelay() {
	d := t.opts.Contention.Delay(t.Active())
	if d <= 0 {
		return
	}
	t.act.contended.Add(1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.closing:
	}
}
