package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxShards bounds the number of shards of one run.
const MaxShards = 4096

// Shard is one load generator's share of a run that several generators
// carry out together (docs/distributed.md). The zero Shard, and any with
// Count ≤ 1, is the whole run.
//
// The partition is k6's execution segments in their simplest, exact form:
// every shard computes the ONE schedule of the run from its seed (the same
// arrivals, at the same offsets, as a single-machine run) and keeps the
// arrivals whose index k has k mod Count == Index. Users are partitioned
// the same way: user u (its index in the users list) belongs to shard
// u mod Count. Together the Count shards offer exactly the single run's
// arrivals, each exactly once.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/N" (0 ≤ i < N ≤ MaxShards). "" is the whole run.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want i/N, e.g. 0/4", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/N with whole numbers, e.g. 0/4", s)
	}
	sh := Shard{Index: i, Count: n}
	if n < 1 {
		return Shard{}, fmt.Errorf("shard %q: the number of shards must be 1 to %d", s, MaxShards)
	}
	return sh, sh.Validate()
}

// Validate checks 0 ≤ Index < Count ≤ MaxShards (the zero Shard is valid).
func (s Shard) Validate() error {
	if s == (Shard{}) {
		return nil
	}
	if s.Count < 1 || s.Count > MaxShards {
		return fmt.Errorf("shard %d/%d: the number of shards must be 1 to %d", s.Index, s.Count, MaxShards)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d/%d: the index must be 0 to %d", s.Index, s.Count, s.Count-1)
	}
	return nil
}

// Whole reports whether s is the whole run (not sharded).
func (s Shard) Whole() bool { return s.Count <= 1 }

// String is "i/N", or "" for the whole run.
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Owns reports whether the arrival (or user) with index k is this shard's.
func (s Shard) Owns(k int64) bool {
	if s.Whole() {
		return true
	}
	return k%int64(s.Count) == int64(s.Index)
}

// Users returns how many of n users (indices 0..n-1) are this shard's.
func (s Shard) Users(n int) int {
	if s.Whole() {
		return n
	}
	if s.Index >= n {
		return 0
	}
	return (n - s.Index + s.Count - 1) / s.Count
}

// User returns the global index of this shard's j-th user: j·Count + Index.
func (s Shard) User(j int) int {
	if s.Whole() {
		return j
	}
	return j*s.Count + s.Index
}

// Local maps a user index u drawn over all n users to one of this shard's
// users, 0 ≤ j < Users(n): the shard's user in u's block of Count
// consecutive users (the last one for a short last block). A session's
// user is drawn as in a single-machine run (the same random numbers
// consumed) and then kept within its shard; for the whole run it is u.
func (s Shard) Local(u, n int) int {
	if s.Whole() {
		return u
	}
	return min(u/s.Count, s.Users(n)-1)
}

// Partition makes sched yield only shard's arrivals; their indices and
// offsets are those of the whole schedule. It returns sched.
func (sched *ArrivalSchedule) Partition(shard Shard) *ArrivalSchedule {
	sched.shard = shard
	return sched
}
