// Package heapwarm touches, at set-up, the memory a process's heap will
// grow into before the garbage collector's next cycle.
//
// Why: a Go heap grows to about twice its live data (GOGC=100) before a
// collection, and each page it grows into costs a page fault when it is
// first written. The demo target's live heap is its mailboxes (hundreds of
// MB for thousands of users), and those faults came while it served the
// run: 265,000 of them and 13% of its CPU at 3,000,000 sessions/hour, CPU
// taken from the generator on the same machine (docs/performance.md,
// "Issue 37, twelfth round"). Touched at set-up, the pages are freed by the
// next collection and reused by the heap without a fault. The process's
// peak memory is what it would have been anyway (the collector's goal,
// which mailbench's memory estimate already counts), reached earlier.
package heapwarm

import (
	"os"
	"runtime"
)

// MinRoom is the least room worth warming. A heap smaller than it is not
// looked at further, not even collected (a small target, as in most tests):
// with GOGC=100 the room is the live data, at most the heap.
const MinRoom = 64 << 20

// chunk is the size of each allocation Warm touches: a large object, whose
// pages the heap takes back whole at the next collection.
const chunk = 4 << 20

// Warm writes to nine tenths of the room between the live heap and the
// collector's next goal, in 4 MiB allocations it then drops, and returns
// the bytes touched: 0 when the room is below MinRoom. It starts with a
// collection, so that the room is measured from the live data, and ends
// with one, so that the pages are free when it returns. It performs no
// I/O; it takes about half a second per GB of room.
func Warm() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc < MinRoom {
		return 0
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r := (int64(ms.NextGC) - int64(ms.HeapAlloc)) * 9 / 10
	if r < MinRoom {
		return 0
	}
	page := os.Getpagesize()
	keep := make([][]byte, 0, r/chunk) // all held until the end, so that none is reused for the next
	var touched int64
	for touched+chunk <= r {
		b := make([]byte, chunk)
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		keep = append(keep, b)
		touched += chunk
	}
	runtime.KeepAlive(keep)
	// Freed now, not at a collection the next allocations trigger: the
	// runtime gives back to the system free pages that would take the heap
	// past its goal as it grows, and growing while a collection runs is
	// when it would give these back (TestWarmSavesFaults under CI's load).
	// After this collection the pages are free, within the goal, and the
	// heap's next allocations take them first.
	runtime.GC()
	return touched
}
