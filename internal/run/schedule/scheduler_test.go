package schedule

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestArrivalScheduleReproducible(t *testing.T) {
	a := NewArrivalSchedule(3600, 42, 0)
	b := NewArrivalSchedule(3600, 42, 0)
	c := NewArrivalSchedule(3600, 43, 0)
	same, differ := true, false
	var last time.Duration
	for range 1000 {
		ia, oa := a.Next()
		_, ob := b.Next()
		_, oc := c.Next()
		if oa != ob {
			same = false
		}
		if oa != oc {
			differ = true
		}
		if oa < last {
			t.Fatalf("arrival %d at %v goes back before %v", ia, oa, last)
		}
		last = oa
	}
	if !same {
		t.Error("same seed gave different schedules")
	}
	if !differ {
		t.Error("different seeds gave the same schedule")
	}
}

func TestArrivalScheduleZeroRate(t *testing.T) {
	s := NewArrivalSchedule(0, 1, 0)
	if _, off := s.Next(); off != time.Duration(math.MaxInt64) {
		t.Fatalf("zero rate: first arrival at %v, want never", off)
	}
}

// runSimulatedHour runs the scheduler for one simulated hour at perHour with
// sessions lasting sessionLen, and returns its counts.
func runSimulatedHour(t *testing.T, perHour float64, sessionLen time.Duration, maxConc int) Counts {
	t.Helper()
	var counts Counts
	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler{
			Schedule:      NewArrivalSchedule(perHour, 7, 0),
			MaxConcurrent: maxConc,
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s.Admit = func(a Arrival) (func(), bool) {
			return func() {
				select {
				case <-time.After(sessionLen):
				case <-ctx.Done():
				}
			}, true
		}
		s.Run(ctx, time.Now(), time.Hour)
		s.Wait()
		counts = s.Counts()
	})
	return counts
}

func TestSchedulerAchievesTargetRate(t *testing.T) {
	const perHour = 100_000
	for _, tc := range []struct {
		name       string
		sessionLen time.Duration
	}{
		{"fast server", 10 * time.Millisecond},
		// A server that takes 30 s per session: ~830 sessions at once. The
		// arrivals must not slow down because sessions are slow.
		{"slow server", 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runSimulatedHour(t, perHour, tc.sessionLen, 0)
			if dev := math.Abs(float64(c.Started)-perHour) / perHour; dev > 0.01 {
				t.Errorf("started %d sessions in a simulated hour, target %d (%.2f%% off)", c.Started, perHour, 100*dev)
			}
			if c.Late != 0 || c.Dropped != 0 {
				t.Errorf("late %d, dropped %d; want 0 with no cap", c.Late, c.Dropped)
			}
			if c.Completed != c.Started {
				t.Errorf("completed %d of %d", c.Completed, c.Started)
			}
			if tc.sessionLen == 30*time.Second && c.MaxActive < 500 {
				t.Errorf("max active %d: slow sessions should pile up, not throttle arrivals", c.MaxActive)
			}
		})
	}
}

func TestSchedulerDropsAtCap(t *testing.T) {
	// 3600/h with 10 s sessions wants ~10 at once; a cap of 2 must drop most
	// arrivals and count them, while the scheduled count stays at the target.
	c := runSimulatedHour(t, 3600, 10*time.Second, 2)
	if c.Dropped == 0 {
		t.Fatal("no dropped sessions at a cap of 2")
	}
	if c.Started+c.Dropped != c.Scheduled {
		t.Errorf("started %d + dropped %d != scheduled %d", c.Started, c.Dropped, c.Scheduled)
	}
	if c.MaxActive > 2 {
		t.Errorf("max active %d exceeds cap 2", c.MaxActive)
	}
	if dev := math.Abs(float64(c.Scheduled)-3600) / 3600; dev > 0.05 {
		t.Errorf("scheduled %d, want ~3600", c.Scheduled)
	}
}

func TestSchedulerCountsLateStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var admitted atomic.Int64
		s := &Scheduler{
			Schedule:      NewArrivalSchedule(3600, 3, 0),
			LateTolerance: 100 * time.Millisecond,
			Admit: func(a Arrival) (func(), bool) {
				// The generator stalls for 2 s on the 10th arrival: the
				// arrivals due during the stall start late, and are counted.
				if admitted.Add(1) == 10 {
					time.Sleep(2 * time.Second)
				}
				return func() {}, true
			},
		}
		ctx := context.Background()
		s.Run(ctx, time.Now(), 10*time.Minute)
		s.Wait()
		c := s.Counts()
		if c.Late == 0 {
			t.Fatalf("no late sessions after a 2 s stall: %+v", c)
		}
		if c.Late > 10 {
			t.Errorf("late %d: only arrivals due during the stall should be late", c.Late)
		}
		if c.Started != c.Scheduled {
			t.Errorf("late sessions must still start: %+v", c)
		}
	})
}

func TestSchedulerStopsOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop, cancelStop := context.WithCancel(context.Background())
		cut, cancelCut := context.WithCancel(context.Background())
		s := &Scheduler{
			Schedule: NewArrivalSchedule(3600, 1, 0),
			Admit: func(a Arrival) (func(), bool) {
				return func() { <-cut.Done() }, true
			},
		}
		go func() {
			time.Sleep(time.Minute)
			cancelStop()
			time.Sleep(time.Second)
			cancelCut()
		}()
		t0 := time.Now()
		s.Run(stop, t0, time.Hour)
		if d := time.Since(t0); d != time.Minute {
			t.Errorf("Run returned after %v, want 1m (when stopped)", d)
		}
		s.Wait()
		if s.Active() != 0 {
			t.Errorf("%d sessions still active", s.Active())
		}
	})
}

// The lateness histogram is the generator's own delay: on time, every
// arrival is 0 µs late; a scheduler held up for 2 s (a GC pause, CPU
// starvation: here an Admit that blocks) hands out the arrivals due meanwhile
// late by up to 2 s (less the gap to the next arrival), and the histogram says so, whatever the server does.
func TestSchedulerLatenessHistogram(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func(stallAt int64) *Scheduler {
			s := &Scheduler{
				Schedule: NewArrivalSchedule(36000, 3, 0), // 10/s
				Admit: func(a Arrival) (func(), bool) {
					if a.Index == stallAt {
						time.Sleep(2 * time.Second) // the generator stalls
					}
					return func() {}, true
				},
			}
			ctx := context.Background()
			s.Run(ctx, time.Now(), 10*time.Second)
			s.Wait()
			return s
		}
		onTime := run(-1).Lateness()
		if onTime.TotalCount() < 50 || onTime.Max() != 0 {
			t.Errorf("on time: %d arrivals, max lateness %d µs; want ~100, 0", onTime.TotalCount(), onTime.Max())
		}
		s := run(10)
		h := s.Lateness()
		if h.TotalCount() != s.Counts().Scheduled {
			t.Errorf("lateness of %d arrivals, %d scheduled", h.TotalCount(), s.Counts().Scheduled)
		}
		if max := time.Duration(h.Max()) * time.Microsecond; max < time.Second || max > 2*time.Second {
			t.Errorf("max lateness %v after a 2 s stall", max)
		}
		if p50 := h.ValueAtQuantile(50); p50 != 0 {
			t.Errorf("p50 lateness %d µs: most arrivals were on time", p50)
		}
		if s.Counts().Late == 0 {
			t.Error("no arrival counted late")
		}
	})
}
