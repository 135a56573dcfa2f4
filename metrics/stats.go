package metrics

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/measure"
)

// The geometry of every histogram in mailbench: microseconds from 1 µs to
// one hour, three significant digits. Histograms of other geometry are
// rejected by Merge and DecodeHistogram, so merges are always exact.
const (
	HistogramLowest  int64 = 1
	HistogramHighest int64 = int64(time.Hour / time.Microsecond)
	HistogramDigits        = 3
)

// NewHistogram returns an empty histogram of mailbench's geometry.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistogramLowest, HistogramHighest, HistogramDigits)
}

// RecordDuration records d in h in microseconds, clamped to the histogram's
// range [0, 1h]: a negative duration counts as 0, a longer one as 1 h.
// The exact count is never lost; only the value is clamped.
func RecordDuration(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(clampMicros(d)) // cannot fail: in range
}

func sameGeometry(h *hdrhistogram.Histogram) bool {
	return h != nil && h.LowestTrackableValue() == HistogramLowest &&
		h.HighestTrackableValue() == HistogramHighest && h.SignificantFigures() == HistogramDigits
}

// FunctionStats holds the exact counts of one function against one limit.
//
// Decision: the Histogram records ALL operations, failures included (a
// timed-out operation's duration is part of the latency the server caused),
// so Histogram.TotalCount() == Operations. WithinLimit counts only successful
// operations whose duration is <= Limit; a Limit of 0 means "no limit" and
// WithinLimit stays 0.
//
// A FunctionStats is not safe for concurrent use; Stats guards its own.
type FunctionStats struct {
	Function    measure.Function
	Limit       time.Duration
	Operations  int64
	WithinLimit int64
	Errors      map[measure.ErrorClass]int64 // failed operations by class; never holds OK or Cancelled
	Histogram   *hdrhistogram.Histogram      // µs, 1 µs..1 h, 3 digits; all operations
	// Cancelled counts operations that mailbench itself cut short
	// (measure.Cancelled: end of ramp-down, Ctrl-C). They are not
	// operations of the server: not in Operations, Errors or Histogram.
	Cancelled int64
}

// NewFunctionStats returns empty stats for f against limit. It doesn't
// perform I/O; it allocates a histogram of about 150 KB.
func NewFunctionStats(f measure.Function, limit time.Duration) *FunctionStats {
	return &FunctionStats{
		Function:  f,
		Limit:     limit,
		Errors:    make(map[measure.ErrorClass]int64),
		Histogram: NewHistogram(),
	}
}

// Record counts one operation that took d and ended in class (measure.OK on
// success).
func (s *FunctionStats) Record(d time.Duration, class measure.ErrorClass) {
	if class == measure.Cancelled {
		s.Cancelled++
		return
	}
	s.Operations++
	if class == measure.OK {
		if s.Limit > 0 && d <= s.Limit {
			s.WithinLimit++
		}
	} else {
		if s.Errors == nil {
			s.Errors = make(map[measure.ErrorClass]int64)
		}
		s.Errors[class]++
	}
	if s.Histogram == nil {
		s.Histogram = NewHistogram()
	}
	RecordDuration(s.Histogram, d)
}

// ErrorCount is the number of failed operations, all classes together.
func (s *FunctionStats) ErrorCount() int64 {
	var n int64
	for _, c := range s.Errors {
		n += c
	}
	return n
}

// Clone returns a deep copy of s.
func (s *FunctionStats) Clone() *FunctionStats {
	c := *s
	c.Errors = make(map[measure.ErrorClass]int64, len(s.Errors))
	for k, v := range s.Errors {
		c.Errors[k] = v
	}
	if s.Histogram != nil {
		c.Histogram = s.Histogram.Clone()
	} else {
		c.Histogram = NewHistogram()
	}
	return &c
}

// Merge adds o's counts and histogram to s exactly. It fails, leaving s
// unchanged, when the functions or limits differ (the within-limit counts
// would not be comparable) or when o's histogram is not of mailbench's
// geometry.
func (s *FunctionStats) Merge(o *FunctionStats) error {
	if s.Function != o.Function {
		return fmt.Errorf("merge %q with %q: different functions", s.Function, o.Function)
	}
	if s.Limit != o.Limit {
		return fmt.Errorf("merge %q: limits differ (%v and %v)", s.Function, s.Limit, o.Limit)
	}
	if o.Histogram != nil && !sameGeometry(o.Histogram) {
		return fmt.Errorf("merge %q: histogram geometry differs", s.Function)
	}
	if s.Histogram == nil {
		s.Histogram = NewHistogram()
	} else if !sameGeometry(s.Histogram) {
		return fmt.Errorf("merge %q: histogram geometry differs", s.Function)
	}
	s.Operations += o.Operations
	s.WithinLimit += o.WithinLimit
	s.Cancelled += o.Cancelled
	if s.Errors == nil {
		s.Errors = make(map[measure.ErrorClass]int64)
	}
	for k, v := range o.Errors {
		s.Errors[k] += v
	}
	if o.Histogram != nil {
		if dropped := s.Histogram.Merge(o.Histogram); dropped != 0 {
			// Unreachable with equal geometry short of int64 overflow.
			return fmt.Errorf("merge %q: %d histogram values dropped", s.Function, dropped)
		}
	}
	return nil
}

// Check reports whether s is internally consistent: non-negative counts,
// WithinLimit + errors <= Operations, and a histogram of mailbench's geometry
// holding exactly Operations values. Use it on stats read from untrusted
// files.
func (s *FunctionStats) Check() error {
	var errs []error
	if s.Operations < 0 || s.WithinLimit < 0 || s.Limit < 0 || s.Cancelled < 0 {
		errs = append(errs, errors.New("negative count or limit"))
	}
	var nerr int64
	for k, v := range s.Errors {
		if k == measure.OK || k == measure.Cancelled || v < 0 {
			errs = append(errs, fmt.Errorf("bad error count %q=%d", k, v))
		}
		nerr += v
		if nerr < 0 {
			errs = append(errs, errors.New("error counts overflow"))
			break
		}
	}
	if s.WithinLimit > s.Operations || nerr > s.Operations || s.WithinLimit > s.Operations-nerr {
		errs = append(errs, fmt.Errorf("within limit %d + errors %d exceed operations %d", s.WithinLimit, nerr, s.Operations))
	}
	if s.Limit == 0 && s.WithinLimit != 0 {
		errs = append(errs, errors.New("within-limit count without a limit"))
	}
	switch {
	case s.Histogram == nil:
		errs = append(errs, errors.New("no histogram"))
	case !sameGeometry(s.Histogram):
		errs = append(errs, errors.New("histogram geometry differs"))
	case s.Histogram.TotalCount() != s.Operations:
		errs = append(errs, fmt.Errorf("histogram holds %d values, operations %d", s.Histogram.TotalCount(), s.Operations))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%q: %w", s.Function, err)
	}
	return nil
}

// slot is one function's stats behind its own mutex, so that sessions
// recording different functions do not contend.
type slot struct {
	mu sync.Mutex
	fs *FunctionStats
}

// Stats collects the observations of one phase. It is safe for concurrent
// use: Observe takes only the observed function's own mutex (functions with
// a rule are looked up in a map that is never written after NewStats).
// Functions without a rule are recorded too, with no limit, because they
// count towards the error rate.
type Stats struct {
	fixed map[measure.Function]*slot // read-only after NewStats

	// extra holds the functions without a rule, copy-on-write: readers load
	// the map atomically; writers replace it under extraMu.
	extra   atomic.Pointer[map[measure.Function]*slot]
	extraMu sync.Mutex
}

var _ measure.Observer = (*Stats)(nil)

// NewStats returns empty stats with one FunctionStats per function in
// limits, each counting operations within its limit. Functions not in limits
// are recorded when they occur, with no limit. It doesn't perform I/O.
func NewStats(limits map[measure.Function]time.Duration) *Stats {
	s := &Stats{fixed: make(map[measure.Function]*slot, len(limits))}
	for f, lim := range limits {
		s.fixed[f] = &slot{fs: NewFunctionStats(f, lim)}
	}
	return s
}

// lookup returns f's slot, or nil if f has none yet.
func (s *Stats) lookup(f measure.Function) *slot {
	if sl, ok := s.fixed[f]; ok {
		return sl
	}
	if m := s.extra.Load(); m != nil {
		return (*m)[f]
	}
	return nil
}

// slot returns f's slot, creating one without a limit if f has no rule.
func (s *Stats) slot(f measure.Function) *slot {
	if sl := s.lookup(f); sl != nil {
		return sl
	}
	s.extraMu.Lock()
	defer s.extraMu.Unlock()
	if sl := s.lookup(f); sl != nil {
		return sl
	}
	m := make(map[measure.Function]*slot)
	if old := s.extra.Load(); old != nil {
		maps.Copy(m, *old)
	}
	sl := &slot{fs: NewFunctionStats(f, 0)}
	m[f] = sl
	s.extra.Store(&m)
	return sl
}

// Observe records o. It implements measure.Observer and is safe for
// concurrent use. It records every observation it is given; filter by
// measurement window before it (see InWindow).
func (s *Stats) Observe(o measure.Observation) {
	sl := s.slot(o.Function)
	sl.mu.Lock()
	sl.fs.Record(o.Duration, o.Class)
	sl.mu.Unlock()
}

// Snapshot returns a deep copy of every function's stats: all functions with
// a rule (even with no operations) and every other function observed.
func (s *Stats) Snapshot() map[measure.Function]*FunctionStats {
	out := make(map[measure.Function]*FunctionStats, len(s.fixed))
	copySlot := func(f measure.Function, sl *slot) {
		sl.mu.Lock()
		out[f] = sl.fs.Clone()
		sl.mu.Unlock()
	}
	for f, sl := range s.fixed {
		copySlot(f, sl)
	}
	if m := s.extra.Load(); m != nil {
		for f, sl := range *m {
			copySlot(f, sl)
		}
	}
	return out
}

// Merge adds every function of o to s exactly. It fails, changing nothing,
// when a function's limit in o differs from its limit in s. It is safe for
// concurrent use with Observe on either side.
func (s *Stats) Merge(o *Stats) error {
	return s.MergeSnapshot(o.Snapshot())
}

// MergeSnapshot adds the given function stats (for example a Snapshot, or
// stats read from another machine's report) to s exactly. It fails, changing
// nothing, when a limit differs from s's or a stats value is inconsistent.
func (s *Stats) MergeSnapshot(m map[measure.Function]*FunctionStats) error {
	var errs []error
	for f, fs := range m {
		if fs.Function != f {
			errs = append(errs, fmt.Errorf("stats for %q filed under %q", fs.Function, f))
			continue
		}
		if err := fs.Check(); err != nil {
			errs = append(errs, err)
			continue
		}
		// Limits are immutable, so this check holds for the merge below; a
		// function without a slot will get one without a limit.
		var limit time.Duration
		if sl := s.lookup(f); sl != nil {
			limit = sl.fs.Limit
		}
		if limit != fs.Limit {
			errs = append(errs, fmt.Errorf("merge %q: limits differ (%v and %v)", f, limit, fs.Limit))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for f, fs := range m {
		sl := s.slot(f)
		sl.mu.Lock()
		err := sl.fs.Merge(fs)
		sl.mu.Unlock()
		if err != nil {
			return err // unreachable after the checks above
		}
	}
	return nil
}

// InWindow returns an Observer that passes to next only the observations
// that started inside [from, to): "an operation counts when it starts inside
// the measurement window". It is safe for concurrent use if next is.
func InWindow(next measure.Observer, from, to time.Time) measure.Observer {
	return measure.ObserverFunc(func(o measure.Observation) {
		if !o.Start.Before(from) && o.Start.Before(to) {
			next.Observe(o)
		}
	})
}
