package metrics

import (
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

var benchStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// benchObservations returns n observations spread over all functions, the
// three phases of a window [benchStart+10m, benchStart+70m) and durations
// from 1 ms to ~4 s; one in 64 is an error.
func benchObservations(n int) []measure.Observation {
	errBad := errors.New("NO [SERVERBUG] try again")
	obs := make([]measure.Observation, n)
	for i := range obs {
		o := measure.Observation{
			Function: measure.AllFunctions[i%len(measure.AllFunctions)],
			Start:    benchStart.Add(time.Duration(i%80) * time.Minute),
			Duration: time.Duration(1+(i*7919)%4000) * time.Millisecond,
		}
		if i%64 == 63 {
			o.Class, o.Err = measure.Protocol, errBad
		}
		obs[i] = o
	}
	return obs
}

func newBenchRecorder(w io.Writer) *Recorder {
	return NewRecorder(defaultLimits(), window(benchStart.Add(10*time.Minute), benchStart.Add(70*time.Minute)), w)
}

// heapGrowthPerMillion observes 10^6 observations on GOMAXPROCS goroutines
// into a recorder that has seen every function once, and returns the heap
// growth in bytes (negative when the heap shrank).
func heapGrowthPerMillion(w io.Writer) int64 {
	const total = 1_000_000
	r := newBenchRecorder(w)
	obs := benchObservations(1024)
	for _, o := range obs { // first sight of each function and phase allocates its histogram
		r.Observe(o)
	}
	workers := runtime.GOMAXPROCS(0)
	var before, after runtime.MemStats
	runtime.GC() // twice: the second also empties sync.Pool victim caches
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < total; i += workers {
				r.Observe(obs[i&1023])
			}
		})
	}
	wg.Wait()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(r)
	runtime.KeepAlive(obs)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

var (
	growthOnce  sync.Once
	growthBytes int64
)

// BenchmarkRecorderObserve is the recorder's cost per operation, observed
// from all Ps at once, without a results stream. It also reports
// "B/1e6ops": the heap growth over 10^6 observations (measured once per
// process, outside the timer), which must stay near zero because a
// Recorder keeps counters and histograms, never per-operation samples.
func BenchmarkRecorderObserve(b *testing.B) {
	growthOnce.Do(func() { growthBytes = heapGrowthPerMillion(nil) })
	r := newBenchRecorder(nil)
	obs := benchObservations(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Observe(obs[i&1023])
	}
	b.StopTimer()
	checkObserved(b, r)
	b.ReportMetric(float64(growthBytes), "B/1e6ops")
}

// BenchmarkRecorderObserveParallel is Observe from every core at once on
// one recorder: the contention of sessions sharing it. Its spread on a
// shared 2-core VM is wide, so its target is looser than the serial one's.
func BenchmarkRecorderObserveParallel(b *testing.B) {
	r := newBenchRecorder(nil)
	obs := benchObservations(1024)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Observe(obs[i&1023])
			i++
		}
	})
	b.StopTimer()
	checkObserved(b, r)
}

// checkObserved fails the benchmark unless the recorder counted every
// operation it was given.
func checkObserved(b *testing.B, r *Recorder) {
	b.Helper()
	var ops int64
	for _, p := range []workload.Phase{workload.Warmup, workload.Measurement, workload.Rampdown} {
		for _, fs := range r.Stats(p).Snapshot() {
			ops += fs.Operations
		}
	}
	if ops != int64(b.N) {
		b.Fatalf("recorder counted %d operations, want %d", ops, b.N)
	}
}

// BenchmarkRecorderObserveStream is the cost per operation with the
// per-operation CSV stream (mailbench run --results) on, written to
// io.Discard.
func BenchmarkRecorderObserveStream(b *testing.B) {
	r := newBenchRecorder(io.Discard)
	obs := benchObservations(1024)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Observe(obs[i&1023])
			i++
		}
	})
	b.StopTimer()
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
}
