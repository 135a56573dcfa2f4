package schedule

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkArrivalScheduleNext is the cost of drawing one arrival.
func BenchmarkArrivalScheduleNext(b *testing.B) {
	s := NewArrivalSchedule(12_000, 1, 0)
	var last time.Duration
	b.ReportAllocs()
	for b.Loop() {
		_, last = s.Next()
	}
	if last <= 0 {
		b.Fatalf("last offset %v after %d arrivals", last, b.N)
	}
}

// BenchmarkSchedulerAdmit is the scheduler's cost per arrival: drawing it,
// the cap check, Admit, the counters and the session goroutine, with a
// no-op session. The rate (10^12 per hour, one arrival every 3.6 ns) keeps
// every arrival due at once, so the loop is CPU-bound and never waits on
// its timer; Admit stops the run after b.N arrivals.
func BenchmarkSchedulerAdmit(b *testing.B) {
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var admitted atomic.Int64
	n := int64(b.N)
	noop := func() {}
	s := &Scheduler{
		Schedule:      NewArrivalSchedule(1e12, 1, 0),
		MaxConcurrent: 1 << 20,
		LateTolerance: time.Hour, // every arrival is "late" by the benchmark's design
		Admit: func(Arrival) (func(), bool) {
			if admitted.Add(1) >= n {
				cancel()
			}
			return noop, true
		},
	}
	b.ReportAllocs()
	b.ResetTimer()
	s.Run(stop, time.Now(), time.Duration(math.MaxInt64))
	s.Wait()
	b.StopTimer()
	c := s.Counts()
	if c.Started != n || c.Completed != n || c.Dropped != 0 {
		b.Fatalf("counts %+v, want %d started and completed, none dropped", c, n)
	}
}
