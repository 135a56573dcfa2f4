package runtimetune

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNextCores(t *testing.T) {
	const s = time.Second
	sample := func(cpu time.Duration, waits uint64, p99 time.Duration) coreSample {
		return coreSample{wall: s, cpu: cpu, waits: waits, p99Wait: p99}
	}
	for _, tc := range []struct {
		name            string
		cur, ceiling    int
		s               coreSample
		quiet           int
		want, wantQuiet int
	}{
		{"one P busy: doubles", 1, 8, sample(960*time.Millisecond, 0, 0), 0, 2, 0},
		{"two Ps busy: doubles", 2, 8, sample(1950*time.Millisecond, 100, 10*time.Microsecond), 0, 4, 0},
		{"doubling stops at the ceiling", 4, 6, sample(3900*time.Millisecond, 0, 0), 0, 6, 0},
		{"at the ceiling: stays", 2, 2, sample(2*s, 1000, 5*time.Millisecond), 0, 2, 0},
		{"waits to run: doubles, however idle", 1, 2, sample(100*time.Millisecond, 50, 2*time.Millisecond), 0, 2, 0},
		{"too few waits to count", 1, 2, sample(100*time.Millisecond, minWaits-1, 50*time.Millisecond), 0, 1, 0},
		{"one P, 70% busy, short waits: stays", 1, 2, sample(700*time.Millisecond, 5000, 60*time.Microsecond), 0, 1, 0},
		{"one P, 90% busy, waits under 1 ms: stays", 1, 2, sample(900*time.Millisecond, 5000, 300*time.Microsecond), 0, 1, 0},
		{"two Ps, one would do: counts a quiet interval", 2, 2, sample(400*time.Millisecond, 100, 100*time.Microsecond), 3, 2, 4},
		{"the last quiet interval gives one back", 2, 2, sample(400*time.Millisecond, 100, 100*time.Microsecond), shrinkIntervals - 1, 1, 0},
		{"one fewer would be too busy: not quiet", 3, 4, sample(1600*time.Millisecond, 0, 0), 7, 3, 0},
		{"two Ps, one would be 70% busy: quiet", 2, 2, sample(700*time.Millisecond, 500, 80*time.Microsecond), 0, 2, 1},
		{"two Ps, one would be 80% busy: not quiet", 2, 2, sample(800*time.Millisecond, 500, 80*time.Microsecond), 4, 2, 0},
		{"waits too long to give one back", 2, 2, sample(100*time.Millisecond, 100, 500*time.Microsecond), 7, 2, 0},
		{"one P never gives one back", 1, 2, sample(0, 0, 0), 30, 1, 0},
		{"an empty interval changes nothing", 2, 4, coreSample{}, 5, 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, quiet := nextCores(tc.cur, tc.ceiling, tc.s, tc.quiet)
			if got != tc.want || quiet != tc.wantQuiet {
				t.Errorf("nextCores(%d, %d, %+v, %d) = %d, %d; want %d, %d", tc.cur, tc.ceiling, tc.s, tc.quiet, got, quiet, tc.want, tc.wantQuiet)
			}
		})
	}
}

func TestP99(t *testing.T) {
	buckets := []float64{0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2}
	before := &metrics.Float64Histogram{Buckets: buckets, Counts: []uint64{5, 5, 5, 5, 5}}
	now := &metrics.Float64Histogram{Buckets: buckets, Counts: []uint64{5, 5 + 90, 5 + 9, 5, 5 + 1}}
	// 100 new waits: 90 under 10 µs, 9 under 100 µs, 1 under 10 ms: the
	// 99th is in the 100 µs bucket.
	if got, n := p99(before, now); got != 100*time.Microsecond || n != 100 {
		t.Errorf("p99 = %v of %d, want 100µs of 100", got, n)
	}
	now.Counts[4] += 10 // 11 of 110 past 1 ms
	if got, _ := p99(before, now); got != 10*time.Millisecond {
		t.Errorf("p99 with 10%% slow = %v, want 10ms", got)
	}
	if got, n := p99(now, now); got != 0 || n != 0 {
		t.Errorf("nothing new: %v of %d", got, n)
	}
	if got, n := p99(nil, before); got != 10*time.Millisecond || n != 25 {
		t.Errorf("from nothing: %v of %d", got, n)
	}
}

// TestAdaptFollowsTheSamples drives the loop with scripted samples: it
// doubles on a busy interval, gives one back after the quiet ones, and
// stops when told.
func TestAdaptFollowsTheSamples(t *testing.T) {
	oneBusy := coreSample{wall: coresInterval, cpu: coresInterval}
	twoBusy := coreSample{wall: coresInterval, cpu: 2 * coresInterval}
	quiet := coreSample{wall: coresInterval, cpu: coresInterval / 10}
	script := []coreSample{oneBusy, twoBusy, oneBusy}
	for range shrinkIntervals {
		script = append(script, quiet)
	}
	var set []int
	ticks := make(chan time.Time)
	stop, done := make(chan struct{}), make(chan struct{})
	next := 0
	go adapt(4, func() coreSample { s := script[next]; next++; return s }, func(n int) { set = append(set, n) }, func() slackControl { return nil }, ticks, stop, done)
	for range script {
		ticks <- time.Time{}
	}
	close(stop)
	<-done
	if want := []int{2, 4, 3}; !slices.Equal(set, want) {
		t.Errorf("GOMAXPROCS set to %v, want %v", set, want)
	}
}

// TestAdaptCoresInProcess runs this test binary as a child that adapts
// its cores: it starts on one P, reaches the ceiling when two goroutines
// spin, and keeps the user's GOMAXPROCS when set; FixCores ends it.
func TestAdaptCoresInProcess(t *testing.T) {
	if os.Getenv("CORES_CHILD") == "1" {
		AdaptCores()
		fmt.Printf("start %d of %d\n", runtime.GOMAXPROCS(0), Ceiling())
		if os.Getenv(coresEnvironment) == "" {
			stop := make(chan struct{})
			for range 2 {
				go func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
					}
				}()
			}
			deadline := time.Now().Add(10 * time.Second)
			for runtime.GOMAXPROCS(0) < Ceiling() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			close(stop)
			fmt.Printf("busy %d\n", runtime.GOMAXPROCS(0))
		}
		FixCores(1)
		fmt.Printf("fixed %d of %d\n", runtime.GOMAXPROCS(0), Ceiling())
		os.Exit(0)
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to adapt")
	}
	ceiling := runtime.GOMAXPROCS(0)
	for _, tc := range []struct{ env, want string }{
		{"", fmt.Sprintf("start 1 of %d\nbusy %d\nfixed 1 of 1\n", ceiling, ceiling)},
		{"2", "start 2 of 2\nfixed 1 of 1\n"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestAdaptCoresInProcess$")
		cmd.Env = append(os.Environ(), "CORES_CHILD=1")
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, coresEnvironment+"=") })
		if tc.env != "" {
			cmd.Env = append(cmd.Env, coresEnvironment+"="+tc.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != tc.want {
			t.Errorf("GOMAXPROCS=%q: child said %q (%v), want %q", tc.env, out, err, tc.want)
		}
	}
}

// TestSamplerCountsWaits: an interval in which goroutines ran counts
// their waits to run, and the next interval counts only its own (the
// runtime writes each Read into the same histogram: the sampler keeps a
// copy).
func TestSamplerCountsWaits(t *testing.T) {
	s := &coresSampler{samples: []metrics.Sample{{Name: latenciesMetric}}}
	s.sample()
	churn := func() {
		done := make(chan struct{})
		for range 2000 {
			go func() { runtime.Gosched(); done <- struct{}{} }()
		}
		for range 2000 {
			<-done
		}
	}
	churn()
	first := s.sample()
	if first.waits == 0 || first.wall <= 0 {
		t.Fatalf("an interval of 2,000 goroutines counted %d waits in %v", first.waits, first.wall)
	}
	if second := s.sample(); second.waits >= first.waits {
		t.Errorf("an idle interval counted %d waits, the busy one before it %d", second.waits, first.waits)
	}
}
