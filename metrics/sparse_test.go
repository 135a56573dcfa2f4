package metrics

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// TestBucketFloorSameBucket: a value and its bucket floor land in the same
// bucket of mailbench's histogram geometry, and the floor is its own floor.
func TestBucketFloorSameBucket(t *testing.T) {
	values := []int64{0, 1, 2, 1023, 1024, 2046, 2047, 2048, 2049, 2050, 4095, 4096, 4097, 1<<20 - 1, 1 << 20, 1<<20 + 1, HistogramHighest - 1, HistogramHighest}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		values = append(values, rng.Int64N(HistogramHighest+1), rng.Int64N(1<<uint(rng.IntN(32))))
	}
	ref := NewHistogram()
	for i, v := range values {
		f := bucketFloor(v)
		if f > v || bucketFloor(f) != f {
			t.Fatalf("bucketFloor(%d) = %d: above the value or not its own floor", v, f)
		}
		if !ref.ValuesAreEquivalent(v, f) {
			t.Fatalf("%d and its bucket floor %d are in different buckets", v, f)
		}
		if i < 40 { // the edges, recorded too
			a, b := NewHistogram(), NewHistogram()
			_ = a.RecordValue(v)
			_ = b.RecordValue(f)
			if !a.Equals(b) || a.Max() != b.Max() {
				t.Fatalf("%d and its bucket floor %d record differently", v, f)
			}
		}
	}
}

// TestAccSparseMatchesDense: an acc's durations, sparse, dense after its
// bucket bound, or recorded on both sides of the move, give the histogram
// that recording every duration in a dense one gives.
func TestAccSparseMatchesDense(t *testing.T) {
	cases := []struct {
		name string
		n    int
		dur  func(rng *rand.Rand) time.Duration
	}{
		{"few buckets", 5000, func(rng *rand.Rand) time.Duration { return time.Duration(500+rng.IntN(300)) * time.Microsecond }},
		{"past the bound", 20000, func(rng *rand.Rand) time.Duration { return time.Duration(rng.Int64N(int64(30 * time.Second))) }},
		{"clamped", 3000, func(rng *rand.Rand) time.Duration {
			switch rng.IntN(3) {
			case 0:
				return -time.Duration(rng.IntN(1000))
			case 1:
				return 2*time.Hour + time.Duration(rng.IntN(1000))
			}
			return time.Duration(rng.IntN(5000)) * time.Microsecond
		}},
		{"one bucket", 100, func(*rand.Rand) time.Duration { return 3 * time.Millisecond }},
		{"none", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			tl := &timeline{}
			var a acc
			want := NewHistogram()
			for range c.n {
				d := c.dur(rng)
				a.record(d, tl)
				RecordDuration(want, d)
			}
			got := a.dense(tl)
			if !got.Equals(want) {
				t.Fatalf("after %d durations the acc's histogram differs from the dense one (%d values against %d; p95 %d against %d µs)",
					c.n, got.TotalCount(), want.TotalCount(), got.ValueAtQuantile(95), want.ValueAtQuantile(95))
			}
			if got.Max() != want.Max() || got.Min() != want.Min() {
				t.Fatalf("max/min %d/%d, want %d/%d", got.Max(), got.Min(), want.Max(), want.Min())
			}
		})
	}
}

// TestTimelineOpenIntervalsSmall: a timeline whose intervals stay open for
// a run's grace (twice a 30 s operation timeout + 10 s) at a 1 s interval,
// with 16 functions, holds its open intervals in a few MB. Dense, each
// function of each open interval was a 184 KiB histogram: about 200 MB.
func TestTimelineOpenIntervalsSmall(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures under -race are the detector's")
	}
	const grace, secs, perSecond = 70 * time.Second, 70, 40
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(120*time.Second)), nil)
	r.SetTimeline(TimelineOptions{Interval: time.Second, Grace: grace})
	fns := measure.AllFunctions
	if len(fns) > 16 {
		fns = fns[:16]
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	i := 0
	for s := range secs {
		for k := range perSecond {
			for _, f := range fns {
				i++
				start := time.Duration(s)*time.Second + time.Duration(k)*time.Second/perSecond
				r.Observe(obsAt(f, start, time.Duration(1+i%700)*time.Millisecond/7, i%97 == 0))
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Every interval is still open: none has ended a grace before the
	// latest operation's end.
	if n := len(r.Timeline()); n != 0 {
		t.Fatalf("%d points closed, want every interval open", n)
	}
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d open intervals × %d functions: %d KB of heap", secs, len(fns), growth>>10)
	if growth > 24<<20 {
		t.Errorf("%d open intervals × %d functions hold %d MB of heap, want under 24 MB", secs, len(fns), growth>>20)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var ops int64
	for _, p := range r.Timeline() {
		ops += p.Operations + p.Delivery.Operations
	}
	if ops != int64(i) {
		t.Errorf("timeline counts %d operations, want %d", ops, i)
	}
}
