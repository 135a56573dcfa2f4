package runtimetune

import (
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/mailbench/mailbench/internal/lib/cputime"
)

// Adaptive cores: the fewest Ps (GOMAXPROCS) that keep up.
//
// Why: a generator waits on the network most of the time. With a P per
// core, every reply that wakes a goroutine also wakes an idle P's thread
// to look for work (a futex wake, a spin, a sleep again), and the
// threads pass the connections between cores. On the 2-core machine,
// with the peer on the same cores, that cost SMTP submission 13% more
// CPU per message kept alive and 10% per connection (docs/performance.md,
// "Issue 37, twenty-first round"), and the goroutines did not get to run
// any sooner: the time they waited to run was the same on one P.
//
// So the process starts on one P and doubles its Ps (up to the ceiling,
// the GOMAXPROCS it started with) as soon as an interval shows that they
// do not keep up: busy 95% of the time, or goroutines waiting to run
// for more than a millisecond (p99 of the runtime's own histogram,
// /sched/latencies). It gives one back after two seconds in which one P
// fewer would have been at most 75% busy and nothing waited long. A waiting
// goroutine delays what it measures, so the latency rule is what keeps
// the adaptation from costing truth.

// Thresholds of the adaptation (see nextCores).
const (
	coresInterval    = 100 * time.Millisecond // between samples
	growBusy         = 0.95                   // the Ps' busy fraction that gets more Ps
	growWait         = time.Millisecond       // the p99 wait to run that gets more Ps
	minWaits         = 20                     // waits in an interval for its p99 to count
	shrinkBusy       = 0.75                   // one P fewer would be busy less than this…
	shrinkWait       = growWait / 4           // …and the p99 wait under this…
	shrinkIntervals  = 20                     // …for this many intervals in a row
	latenciesMetric  = "/sched/latencies:seconds"
	coresEnvironment = "GOMAXPROCS"
)

// coreSample is what the process did in one interval.
type coreSample struct {
	wall, cpu time.Duration
	waits     uint64        // goroutines that waited to run (sampled by the runtime)
	p99Wait   time.Duration // the 99th percentile of those waits (a bucket's upper bound)
}

// nextCores returns the Ps for the next interval, given the cur Ps the
// sample s was taken on, and the count of quiet intervals in a row (those
// in which one P fewer would have done). It doesn't perform I/O.
func nextCores(cur, ceiling int, s coreSample, quiet int) (next, quietAfter int) {
	if s.wall <= 0 {
		return cur, quiet
	}
	busy := s.cpu.Seconds() / s.wall.Seconds() // cores' worth of CPU
	waited := s.waits >= minWaits && s.p99Wait > growWait
	if cur < ceiling && (busy >= growBusy*float64(cur) || waited) {
		return min(ceiling, 2*cur), 0
	}
	if cur > 1 && busy < shrinkBusy*float64(cur-1) && (s.waits < minWaits || s.p99Wait <= shrinkWait) {
		if quiet+1 >= shrinkIntervals {
			return cur - 1, 0
		}
		return cur, quiet + 1
	}
	return cur, 0
}

// p99 returns the upper bound of the bucket holding the 99th percentile of
// the counts that are in now and not in before, and their number. The two
// come from the same histogram (same buckets).
func p99(before, now *metrics.Float64Histogram) (time.Duration, uint64) {
	var total uint64
	for i, c := range now.Counts {
		total += c - countAt(before, i)
	}
	if total == 0 {
		return 0, 0
	}
	var acc uint64
	for i, c := range now.Counts {
		acc += c - countAt(before, i)
		if float64(acc) >= 0.99*float64(total) {
			return time.Duration(now.Buckets[i+1] * float64(time.Second)), total
		}
	}
	return 0, total
}

func countAt(h *metrics.Float64Histogram, i int) uint64 {
	if h == nil || i >= len(h.Counts) {
		return 0
	}
	return h.Counts[i]
}

// coresSampler reads the process's CPU time and the runtime's wait-to-run
// histogram.
type coresSampler struct {
	at      time.Time
	cpu     time.Duration
	waits   *metrics.Float64Histogram
	spare   []uint64 // the counts before waits', reused
	samples []metrics.Sample
}

// sample returns the interval since the last call.
func (s *coresSampler) sample() coreSample {
	now := time.Now()
	cpu, _ := cputime.Process() // unknown: 0, and the adaptation goes by the waits to run alone
	metrics.Read(s.samples)
	var h *metrics.Float64Histogram
	if s.samples[0].Value.Kind() == metrics.KindFloat64Histogram {
		// A copy of the counts: the next Read writes into the histogram
		// it returned this time.
		v := s.samples[0].Value.Float64Histogram()
		h = &metrics.Float64Histogram{Buckets: v.Buckets, Counts: append(s.spare[:0], v.Counts...)}
		if s.waits != nil {
			s.spare = s.waits.Counts
		}
	}
	out := coreSample{wall: now.Sub(s.at), cpu: cpu - s.cpu}
	if h != nil {
		out.p99Wait, out.waits = p99(s.waits, h)
	}
	s.at, s.cpu, s.waits = now, cpu, h
	return out
}

// coreAdapter is the one adaptation of the process.
var coreAdapter struct {
	mu      sync.Mutex
	ceiling int
	stop    chan struct{}
	done    chan struct{}
}

// AdaptCores starts the adaptation of GOMAXPROCS to the process's load
// (see above), once: later calls do nothing. It does nothing when the
// GOMAXPROCS environment variable is set (the user's choice) or the
// ceiling is one core. Ceiling reports the cores the process may reach.
func AdaptCores() {
	coreAdapter.mu.Lock()
	defer coreAdapter.mu.Unlock()
	if coreAdapter.ceiling != 0 {
		return
	}
	coreAdapter.ceiling = runtime.GOMAXPROCS(0)
	if _, set := os.LookupEnv(coresEnvironment); set || coreAdapter.ceiling <= 1 {
		return
	}
	coreAdapter.stop, coreAdapter.done = make(chan struct{}), make(chan struct{})
	s := &coresSampler{samples: []metrics.Sample{{Name: latenciesMetric}}}
	s.sample()
	runtime.GOMAXPROCS(1)
	ticker := time.NewTicker(coresInterval)
	go func() {
		defer ticker.Stop() // FixCores ends the adaptation for good
		adapt(coreAdapter.ceiling, s.sample, func(n int) { runtime.GOMAXPROCS(n) }, findSlack, ticker.C, coreAdapter.stop, coreAdapter.done)
	}()
}

// findSlack returns the process's slackControl, or nil when sysmon's slack
// cannot be set (see slack.go).
func findSlack() slackControl {
	if t := newThreadSlack(); t != nil {
		return t
	}
	return nil
}

// adapt samples at every tick and sets the Ps nextCores gives, and
// sysmon's slack as nextSlack says, until stop is closed. newSlack is
// called once, the first time the slack would go on (finding sysmon takes
// some 40 ms of sampling); when it returns nil the slack stays off.
func adapt(ceiling int, sample func() coreSample, setProcs func(int), newSlack func() slackControl, ticks <-chan time.Time, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var slack slackControl
	looked := false
	defer func() {
		if slack != nil {
			slack.Set(false)
			slack.Sweep()
		}
	}()
	cur, quiet := 1, 0
	slackOn, slackQuiet := false, 0
	for {
		select {
		case <-stop:
			return
		case <-ticks:
		}
		s := sample()
		next, q := nextCores(cur, ceiling, s, quiet)
		slackOn, slackQuiet = nextSlack(slackOn, cur, s, slackQuiet)
		quiet = q
		if next != cur {
			setProcs(next)
			cur = next
		}
		if slackOn && !looked {
			looked = true
			slack = newSlack()
		}
		if slack != nil {
			slack.Set(slackOn)
			slack.Sweep()
		}
	}
}

// FixCores ends the adaptation, if any, and sets GOMAXPROCS to n (n ≤ 0:
// the ceiling, every core the process may use). Ceiling is n from then
// on.
func FixCores(n int) {
	coreAdapter.mu.Lock()
	defer coreAdapter.mu.Unlock()
	if coreAdapter.stop != nil {
		close(coreAdapter.stop)
		<-coreAdapter.done
		coreAdapter.stop = nil
	}
	if coreAdapter.ceiling == 0 {
		coreAdapter.ceiling = runtime.GOMAXPROCS(0)
	}
	if n <= 0 {
		n = coreAdapter.ceiling
	}
	coreAdapter.ceiling = n
	runtime.GOMAXPROCS(n)
}

// Ceiling returns the most cores the process may use: GOMAXPROCS before
// the adaptation began, or what FixCores set; GOMAXPROCS when neither ran.
func Ceiling() int {
	coreAdapter.mu.Lock()
	defer coreAdapter.mu.Unlock()
	if coreAdapter.ceiling == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return coreAdapter.ceiling
}
