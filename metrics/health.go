package metrics

import (
	"math"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/internal/lib/cputime"
	"github.com/mailbench/mailbench/internal/lib/runtimetune"
	"github.com/mailbench/mailbench/measure"
)

// ProcessSample is the generator process's own resource use so far.
type ProcessSample struct {
	At       time.Time
	CPU      time.Duration // user + system CPU time of the process (rusage)
	CPUKnown bool          // false where rusage is not available
	GCPause  time.Duration // total stop-the-world GC pause time (runtime/metrics, estimated from its histogram)
	GCCycles uint64        // completed GC cycles
}

// ProcessCPU is the process's user + system CPU time so far (getrusage);
// 0 where it is not measured.
func ProcessCPU() time.Duration {
	d, _ := cputime.Process()
	return d
}

// SampleProcess reads the process's CPU time and GC pauses. It doesn't
// perform network I/O and doesn't stop the world.
func SampleProcess() ProcessSample {
	s := ProcessSample{At: time.Now()}
	s.CPU, s.CPUKnown = cputime.Process()
	samples := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(samples)
	if samples[0].Value.Kind() == metrics.KindFloat64Histogram {
		s.GCPause = histogramSum(samples[0].Value.Float64Histogram())
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		s.GCCycles = samples[1].Value.Uint64()
	}
	return s
}

// histogramSum estimates the sum of a runtime/metrics histogram: each
// bucket's count times its midpoint (its finite edge for an open bucket).
func histogramSum(h *metrics.Float64Histogram) time.Duration {
	var sum float64
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		var v float64
		switch {
		case math.IsInf(lo, -1):
			v = hi
		case math.IsInf(hi, 1):
			v = lo
		default:
			v = (lo + hi) / 2
		}
		sum += float64(n) * v
	}
	return time.Duration(sum * float64(time.Second))
}

// GeneratorUse is what the generator process used between two samples.
type GeneratorUse struct {
	Window   time.Duration // wall time between the samples
	CPU      time.Duration // process CPU time in it
	CPUKnown bool
	Cores    int           // cores the generator could use (runtimetune.Ceiling)
	GCPause  time.Duration // stop-the-world GC pauses in it
	GCCycles int64
}

// CPUPercent is CPU time over the cores available for the window: 100
// means every core the generator may use was busy all the time.
func (u GeneratorUse) CPUPercent() float64 {
	if !u.CPUKnown || u.Window <= 0 || u.Cores <= 0 {
		return 0
	}
	return 100 * u.CPU.Seconds() / (u.Window.Seconds() * float64(u.Cores))
}

// Use returns what the process used from a to b, on the cores it may use
// (runtimetune.Ceiling: GOMAXPROCS adapts below it).
func Use(a, b ProcessSample) GeneratorUse {
	return GeneratorUse{
		Window: b.At.Sub(a.At), CPU: b.CPU - a.CPU, CPUKnown: a.CPUKnown && b.CPUKnown,
		Cores: runtimetune.Ceiling(), GCPause: b.GCPause - a.GCPause, GCCycles: int64(b.GCCycles - a.GCCycles),
	}
}

// UseWatch samples the process at the start and at the end of a window,
// from its own goroutine, so that the caller need not be awake then.
type UseWatch struct {
	mu         sync.Mutex
	start, end *ProcessSample
	stop       chan struct{}
	done       chan struct{}
}

// WatchUse samples the process at from and at to (times in the future or
// the past: a past one is sampled at once).
func WatchUse(from, to time.Time) *UseWatch {
	w := &UseWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i, at := range []time.Time{from, to} {
			t := time.NewTimer(time.Until(at))
			select {
			case <-w.stop:
				t.Stop()
				return
			case <-t.C:
			}
			s := SampleProcess()
			w.mu.Lock()
			if i == 0 {
				w.start = &s
			} else {
				w.end = &s
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// Stop ends the watch and returns the use over the window; a window cut
// short (a stopped run) ends now. ok is false when the window never began.
func (w *UseWatch) Stop() (u GeneratorUse, ok bool) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.start == nil {
		return GeneratorUse{}, false
	}
	end := w.end
	if end == nil {
		s := SampleProcess()
		end = &s
	}
	return Use(*w.start, *end), true
}

// StallGuard catches operations that took impossibly long: longer than
// the clients' own deadline (op_timeout) plus a margin. Only a generator
// that was not running (a stall, swapping, a suspended process) can time
// one so: the watchdog would have cut it. Their durations are clamped to
// the limit, so one such value cannot dominate a maximum, and counted.
// It is safe for concurrent use.
type StallGuard struct {
	Limit time.Duration // op_timeout + margin
	n     atomic.Int64
	worst atomic.Int64 // ns
}

// StallMargin is how much longer than op_timeout an operation may be
// observed (closing the connection, scheduling) before it counts as a
// generator stall: a tenth of op_timeout, at least a second.
func StallMargin(opTimeout time.Duration) time.Duration { return max(time.Second, opTimeout/10) }

// Check returns o with its duration clamped to the limit, counting it when
// it was over. Delivery times are not operations and pass unchanged.
func (g *StallGuard) Check(o measure.Observation) measure.Observation {
	if g == nil || g.Limit <= 0 || o.Duration <= g.Limit || o.Function == measure.DeliveryLocal || o.Function == measure.DeliveryRemote {
		return o
	}
	g.n.Add(1)
	for {
		w := g.worst.Load()
		if int64(o.Duration) <= w || g.worst.CompareAndSwap(w, int64(o.Duration)) {
			break
		}
	}
	o.Duration = g.Limit
	return o
}

// Count is the number of operations clamped; Worst the longest observed.
func (g *StallGuard) Count() int64 { return g.n.Load() }

// Worst is the longest duration observed before clamping.
func (g *StallGuard) Worst() time.Duration { return time.Duration(g.worst.Load()) }
