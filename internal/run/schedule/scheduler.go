package schedule

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The lateness histogram's geometry, the same as every histogram of
// mailbench's (metrics.NewHistogram): microseconds, 1 µs to 1 h, 3
// significant digits, so that reports merge it exactly.
const (
	latenessLowest  = 1
	latenessHighest = int64(time.Hour / time.Microsecond)
	latenessDigits  = 3
)

// Arrival is one scheduled session start.
type Arrival struct {
	Index    int64         // position in the ArrivalSchedule
	Offset   time.Duration // intended start, from the run's start
	Intended time.Time     // run start + Offset
	Actual   time.Time     // when the scheduler handed it to a session
}

// Late reports how far behind its intended start the arrival was handed out.
func (a Arrival) Late() time.Duration { return a.Actual.Sub(a.Intended) }

// Counts are the scheduler's exact counters. Only arrivals whose
// intended start lies in the counted window (see Scheduler.Counted) count.
type Counts struct {
	Scheduled    int64 // arrivals due in the window
	Started      int64 // handed to a session
	Late         int64 // started, but later than the tolerance
	Dropped      int64 // not started: concurrency cap reached or no free user
	DroppedAtCap int64 // of Dropped: the concurrency cap was reached
	Completed    int64 // sessions that returned
	MaxActive    int64 // highest number of sessions running at once (whole run)
}

// Scheduler turns an ArrivalSchedule into running sessions without ever
// waiting for one to finish: it is the open model. When a start cannot be
// honoured (cap reached, start refused) the arrival is dropped and counted;
// when it is handed out later than LateTolerance it still runs, counted late.
// A slow server therefore shows up as late/dropped sessions and longer
// response times, never as a lower arrival rate.
type Scheduler struct {
	Schedule      *ArrivalSchedule
	MaxConcurrent int           // 0 = unbounded
	LateTolerance time.Duration // default 1s
	// Counted reports whether an arrival at this offset belongs to the
	// measurement window. nil counts every arrival.
	Counted func(offset time.Duration) bool
	// Admit is called on the scheduler's goroutine for each arrival that the
	// cap lets through; it must not block or perform I/O. It returns the
	// session to run, or ok=false when the session cannot start (e.g. every
	// user is busy), which counts the arrival as dropped. The session runs on
	// its own goroutine and must return promptly once the run cuts it (the
	// caller gives its sessions their context).
	Admit func(a Arrival) (session func(), ok bool)

	active                                                              atomic.Int64
	scheduled, started, late, dropped, droppedCap, completed, maxActive atomic.Int64
	wg                                                                  sync.WaitGroup

	// lateness holds Actual - Intended of every counted arrival, started
	// or dropped: how far behind the schedule the generator itself was.
	lmu      sync.Mutex
	lateness *hdrhistogram.Histogram
}

// recordLateness adds one counted arrival's lateness (µs, clamped to the
// histogram's range).
func (s *Scheduler) recordLateness(d time.Duration) {
	us := min(max(int64(d/time.Microsecond), 0), latenessHighest)
	s.lmu.Lock()
	if s.lateness == nil {
		s.lateness = hdrhistogram.New(latenessLowest, latenessHighest, latenessDigits)
	}
	_ = s.lateness.RecordValue(us) // in range
	s.lmu.Unlock()
}

// Lateness returns a copy of the histogram of how late (actual hand-out
// minus intended start, µs) every arrival due in the counted window was
// handed out or dropped: the generator's own delay, not the server's. It
// has the geometry of every mailbench histogram; empty before any arrival.
func (s *Scheduler) Lateness() *hdrhistogram.Histogram {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.lateness == nil {
		return hdrhistogram.New(latenessLowest, latenessHighest, latenessDigits)
	}
	return s.lateness.Clone()
}

// Run hands out arrivals due before end (an offset from start) until end is
// reached or ctx is done. Run returns when no more arrivals will start; use
// Wait to wait for the running sessions.
func (s *Scheduler) Run(ctx context.Context, start time.Time, end time.Duration) {
	tol := s.LateTolerance
	if tol <= 0 {
		tol = time.Second
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		idx, off := s.Schedule.Next()
		if off >= end {
			return
		}
		intended := start.Add(off)
		if d := time.Until(intended); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		counted := s.Counted == nil || s.Counted(off)
		if counted {
			s.scheduled.Add(1)
		}
		a := Arrival{Index: idx, Offset: off, Intended: intended, Actual: time.Now()}
		if counted {
			s.recordLateness(a.Late())
		}
		if s.MaxConcurrent > 0 && s.active.Load() >= int64(s.MaxConcurrent) {
			if counted {
				s.dropped.Add(1)
				s.droppedCap.Add(1)
			}
			continue
		}
		session, ok := s.Admit(a)
		if !ok {
			if counted {
				s.dropped.Add(1)
			}
			continue
		}
		if counted {
			s.started.Add(1)
			if a.Late() > tol {
				s.late.Add(1)
			}
		}
		n := s.active.Add(1)
		for {
			m := s.maxActive.Load()
			if n <= m || s.maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.active.Add(-1)
			session()
			if counted {
				s.completed.Add(1)
			}
		}()
	}
}

// Wait blocks until every session started by Run has returned.
func (s *Scheduler) Wait() { s.wg.Wait() }

// Active is the number of sessions running now.
func (s *Scheduler) Active() int64 { return s.active.Load() }

// Counts returns the counters so far; safe for concurrent use.
func (s *Scheduler) Counts() Counts {
	return Counts{
		Scheduled:    s.scheduled.Load(),
		Started:      s.started.Load(),
		Late:         s.late.Load(),
		Dropped:      s.dropped.Load(),
		DroppedAtCap: s.droppedCap.Load(),
		Completed:    s.completed.Load(),
		MaxActive:    s.maxActive.Load(),
	}
}
