package delivery

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/mailbench/mailbench/measure"
)

// BenchmarkLedgerAccepted is the cost of recording one accepted message
// with the recipient mix of TestMemoryPerMillion (1.6 recipients on
// average, 4 in 5 local, 10,000 users), and reports "MiB/1e6msgs": the
// ledger's heap growth over the b.N messages, scaled to a million. The IDs
// and addresses are built before the heap is first measured.
func BenchmarkLedgerAccepted(b *testing.B) {
	addrs := make([]string, 10000)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("user%d@example.test", i+1)
	}
	remote := make([]string, 100)
	for i := range remote {
		remote[i] = fmt.Sprintf("r%d@remote.test", i)
	}
	// Recipient lists for message i: the pattern 1, 2, 2, 1, 2 recipients,
	// every fifth recipient remote, cycled over 40 lists (8 passes of the
	// pattern) so that consecutive messages go to different users.
	type rcpts struct{ local, remote []string }
	lists := make([]rcpts, 40)
	rc := 0
	for i := range lists {
		for range []int{1, 2, 2, 1, 2}[i%5] {
			rc++
			if rc%5 == 0 {
				lists[i].remote = append(lists[i].remote, remote[rc%len(remote)])
			} else {
				lists[i].local = append(lists[i].local, addrs[(rc*7919)%len(addrs)])
			}
		}
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = id(uint64(i + 1))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := NewLedger(run, addrs, measure.Discard)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r := lists[i%len(lists)]
		l.Accepted(measure.Submission{ID: ids[i], Accepted: t0, Local: r.local, Remote: r.remote})
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(l)
	runtime.KeepAlive(ids)
	if rec := l.Reconcile(); rec.Accepted != int64(b.N) {
		b.Fatalf("ledger accepted %d of %d messages", rec.Accepted, b.N)
	}
	growth := float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
	b.ReportMetric(growth/float64(b.N)*1e6/(1<<20), "MiB/1e6msgs")
}
