package metrics

import (
	"math/bits"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// sparseMaxBuckets bounds a sparseDurations: past this many distinct
// buckets it hands its counts to a dense histogram. At about 40 bytes a
// map entry, the bound is near a fifth of a dense histogram's 184 KiB.
const sparseMaxBuckets = 1024

// sparseDurations counts durations exactly as a histogram of mailbench's
// geometry (NewHistogram) would, holding only the buckets it has seen.
//
// Why: the timeline keeps an interval open for its grace (twice the
// operation timeout and more) after it ends, with a histogram per function
// in each open interval. Dense, that is (grace / interval) × functions ×
// 184 KiB: about 100 MB for a 1 s interval and a 30 s operation timeout,
// first-touched page by page while the run ramps up. An interval's
// operations usually fall in a few hundred buckets.
//
// The zero value is empty and ready. It is not safe for concurrent use.
type sparseDurations struct {
	counts map[int64]int64 // a bucket's lowest value (µs) -> operations in it
}

// bucketFloor returns the lowest value of us's bucket in mailbench's
// geometry (1 µs unit, 3 significant digits: 2,048 sub-buckets): values
// below 2,048 µs are their own bucket; above, each power of two is split
// into 1,024 buckets. Recording bucketFloor(us) and us count in the same
// bucket (TestBucketFloorSameBucket).
func bucketFloor(us int64) int64 {
	shift := bits.Len64(uint64(us)) - 11
	if shift <= 0 {
		return us
	}
	return us >> shift << shift
}

// clampMicros is d in microseconds, clamped to the histogram's range:
// a negative duration is 0, one longer than an hour an hour.
func clampMicros(d time.Duration) int64 {
	return min(max(int64(d/time.Microsecond), 0), HistogramHighest)
}

// record counts d. It reports false, counting nothing, when d would be a
// bucket beyond sparseMaxBuckets: the caller then moves the counts to a
// dense histogram (foldInto) and records d there.
func (s *sparseDurations) record(d time.Duration) bool {
	k := bucketFloor(clampMicros(d))
	if n, ok := s.counts[k]; ok {
		s.counts[k] = n + 1
		return true
	}
	if len(s.counts) >= sparseMaxBuckets {
		return false
	}
	if s.counts == nil {
		s.counts = make(map[int64]int64)
	}
	s.counts[k] = 1
	return true
}

// addTo adds the counts to h (of mailbench's geometry); s keeps them.
func (s *sparseDurations) addTo(h *hdrhistogram.Histogram) {
	for v, n := range s.counts {
		_ = h.RecordValues(v, n) // v is in range: a clamped value's bucket floor
	}
}

// foldInto adds the counts to h and empties s.
func (s *sparseDurations) foldInto(h *hdrhistogram.Histogram) {
	s.addTo(h)
	s.counts = nil
}
