package metrics

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/measure"
)

// Live is a measure.Observer for a live display: the operations and the
// failures by class since the start, and each function's response times
// since the last TakeWorst, of every phase. It keeps one histogram per
// function that ran in the interval, never a sample, and two sets of them:
// Observe records into one while TakeWorst reads and clears the other, so
// that a take allocates nothing once each function has run (a new dense
// histogram per function per take was ~3 MB of garbage every 5 s, each of
// its pages first touched inside the measurement window). It is safe for
// concurrent use.
type Live struct {
	limits map[measure.Function]time.Duration

	take  sync.Mutex                                   // serialises TakeWorst: it owns spare
	spare map[measure.Function]*hdrhistogram.Histogram // all cleared; guarded by take

	mu       sync.Mutex
	ops      int64
	errors   map[measure.ErrorClass]int64
	interval map[measure.Function]*hdrhistogram.Histogram // guarded by mu
}

// LiveCounts are a Live's totals since its start.
type LiveCounts struct {
	Operations int64                        // timed operations that ended, failed or not (not cancelled)
	Errors     map[measure.ErrorClass]int64 // failures by class; classes without one are absent
}

// Worst is the function whose 95th percentile over an interval stood
// highest against its response-time limit.
type Worst struct {
	Function   measure.Function
	P95, Limit time.Duration
	Operations int64 // in the interval
}

// NewLive returns a Live that judges each function against limits (the
// compliance rules' response-time limits); a function without a limit is
// counted but never the worst.
func NewLive(limits map[measure.Function]time.Duration) *Live {
	return &Live{
		limits:   limits,
		errors:   map[measure.ErrorClass]int64{},
		interval: map[measure.Function]*hdrhistogram.Histogram{},
		spare:    map[measure.Function]*hdrhistogram.Histogram{},
	}
}

// Observe counts o. Cancelled operations (mailbench's own cuts) are not
// counted, as in the report.
func (l *Live) Observe(o measure.Observation) {
	if o.Class == measure.Cancelled {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !measure.IsDelivery(o.Function) {
		l.ops++
		if o.Class != measure.OK {
			l.errors[o.Class]++
		}
	}
	if o.Class != measure.OK {
		return
	}
	h := l.interval[o.Function]
	if h == nil {
		h = NewHistogram()
		l.interval[o.Function] = h
	}
	RecordDuration(h, o.Duration)
}

// Counts returns the totals since the start.
func (l *Live) Counts() LiveCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := LiveCounts{Operations: l.ops, Errors: make(map[measure.ErrorClass]int64, len(l.errors))}
	for k, v := range l.errors {
		c.Errors[k] = v
	}
	return c
}

// TakeWorst returns the function whose 95th percentile of successful
// operations since the last call stood highest against its limit (ok false
// when none with a limit ran), and starts a new interval.
func (l *Live) TakeWorst() (w Worst, ok bool) {
	l.take.Lock()
	defer l.take.Unlock()
	l.mu.Lock()
	interval := l.interval
	l.interval, l.spare = l.spare, nil
	l.mu.Unlock()
	defer func() {
		// Cleared here, outside mu, for the next take to swap in.
		for _, h := range interval {
			h.Reset()
		}
		l.spare = interval
	}()
	best := -1.0
	for _, fn := range measure.AllFunctions { // a fixed order: ties go to the table's first
		h, limit := interval[fn], l.limits[fn]
		if h == nil || h.TotalCount() == 0 || limit <= 0 {
			continue
		}
		p95 := time.Duration(h.ValueAtQuantile(95)) * time.Microsecond
		if ratio := float64(p95) / float64(limit); ratio > best {
			best, ok = ratio, true
			w = Worst{Function: fn, P95: p95, Limit: limit, Operations: h.TotalCount()}
		}
	}
	return w, ok
}
