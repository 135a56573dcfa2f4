package schedule

import (
	"testing"
	"time"
)

// TestPartitionIsTheWholeSchedule: N shards' arrivals, put together, are
// exactly the single schedule's (same index, same offset), each once.
func TestPartitionIsTheWholeSchedule(t *testing.T) {
	const seed, perHour, total = 42, 36000, 5000
	whole := NewArrivalSchedule(perHour, seed, 0)
	want := make(map[int64]time.Duration, total)
	var last time.Duration
	for range total {
		i, off := whole.Next()
		want[i] = off
		last = off
	}
	for _, n := range []int{1, 2, 3, 4, 7} {
		got := make(map[int64]time.Duration, total)
		for k := range n {
			s := NewArrivalSchedule(perHour, seed, 0).Partition(Shard{Index: k, Count: n})
			prev := time.Duration(-1)
			for {
				i, off := s.Next()
				if off > last {
					break
				}
				if !(Shard{Index: k, Count: n}).Owns(i) {
					t.Fatalf("%d/%d yielded arrival %d", k, n, i)
				}
				if _, dup := got[i]; dup {
					t.Fatalf("%d shards: arrival %d yielded twice", n, i)
				}
				if off < prev {
					t.Fatalf("%d/%d: offsets decrease", k, n)
				}
				prev = off
				got[i] = off
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d shards: %d arrivals, want %d", n, len(got), len(want))
		}
		for i, off := range want {
			if got[i] != off {
				t.Fatalf("%d shards: arrival %d at %v, want %v", n, i, got[i], off)
			}
		}
	}
}

func TestShardUsers(t *testing.T) {
	for _, n := range []int{1, 4, 5, 10, 11} {
		for _, cnt := range []int{1, 2, 3, 4} {
			if cnt > n {
				continue
			}
			owner := make([]int, n)
			for i := range owner {
				owner[i] = -1
			}
			for k := range cnt {
				sh := Shard{Index: k, Count: cnt}
				for j := range sh.Users(n) {
					u := sh.User(j)
					if u >= n || owner[u] != -1 || !sh.Owns(int64(u)) {
						t.Fatalf("n=%d %v: user %d (local %d) bad or owned twice", n, sh, u, j)
					}
					owner[u] = k
				}
				for u := range n {
					if j := sh.Local(u, n); j < 0 || j >= sh.Users(n) {
						t.Fatalf("n=%d %v: Local(%d)=%d out of range", n, sh, u, j)
					}
				}
			}
			for u, o := range owner {
				if o == -1 {
					t.Fatalf("n=%d, %d shards: user %d has no shard", n, cnt, u)
				}
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"": {}, "0/1": {0, 1}, "3/4": {3, 4}, " 1 / 2": {1, 2}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"4/4", "-1/4", "1", "a/b", "0/0", "0/5000"} {
		if _, err := ParseShard(in); err == nil {
			t.Errorf("ParseShard(%q): no error", in)
		}
	}
}
