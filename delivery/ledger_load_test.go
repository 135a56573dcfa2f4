package delivery

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// TestConcurrent drives one ledger from many goroutines (run with -race):
// submitters, INBOX readers that see every message several times (some
// before its Accepted), and the sink. The counts must come out exact.
func TestConcurrent(t *testing.T) {
	const (
		workers = 8
		perW    = 500
		n       = workers * perW
	)
	addrs := make([]string, 16)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("user%d@example.test", i+1)
	}
	var c collector
	l := NewLedger(run, addrs, &c)
	local := func(seq uint64) string { return addrs[seq%uint64(len(addrs))] }
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(3)
		go func() { // submitter
			defer wg.Done()
			for k := range perW {
				seq := uint64(w*perW + k + 1)
				l.Accepted(measure.Submission{ID: id(seq), Accepted: at(float64(seq)), Local: []string{local(seq)}, Remote: []string{"r@remote.test"}})
			}
		}()
		go func() { // reader: each message twice, same UID
			defer wg.Done()
			for k := range perW {
				seq := uint64(w*perW + k + 1)
				mi := []MessageInfo{info(seq, uint32(seq), at(float64(seq)+1))}
				l.SeenLocal(local(seq), mi, at(float64(seq)+2))
				l.SeenLocal(local(seq), mi, at(float64(seq)+3))
				_, _ = l.PendingTotal()
			}
		}()
		go func() { // sink
			defer wg.Done()
			for k := range perW {
				seq := uint64(w*perW + k + 1)
				l.ArrivedRemote(arrival(seq, at(float64(seq)+4), "r@remote.test"))
			}
		}()
	}
	wg.Wait()
	want := Reconciliation{Sent: n, Accepted: n, TimedByInternalDate: n, LocalDeliveries: n, RemoteDeliveries: n, DeliveredLocal: n, RelayedRemote: n}
	if got := l.Reconcile(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Reconcile() = %+v, want %+v", got, want)
	}
	var nl, nr int
	for _, o := range c.got() {
		switch o.f {
		case measure.DeliveryLocal:
			nl++
			if o.d != 1500*time.Millisecond { // INTERNALDATE 1 s after acceptance, taken at mid-second
				t.Fatalf("local delivery %v, want 1.5s", o.d)
			}
		case measure.DeliveryRemote:
			nr++
			if o.d != 4*time.Second {
				t.Fatalf("remote delivery %v, want 4s", o.d)
			}
		}
	}
	if nl != n || nr != n {
		t.Errorf("observations: %d local, %d remote; want %d each", nl, nr, n)
	}
}

// fillMillion adds n accepted messages with 1.6 recipients on average
// (1, 2, 2, 1, 2 …), 4 in 5 of them local, and returns the heap growth.
func fillMillion(tb testing.TB, n int) uint64 {
	addrs := make([]string, 10000)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("user%d@example.test", i+1)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = id(uint64(i + 1))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := NewLedger(run, addrs, measure.Discard)
	rc := 0
	next := func() (string, bool) {
		rc++
		if rc%5 == 0 {
			return fmt.Sprintf("r%d@remote.test", rc%100), true
		}
		return addrs[rc%len(addrs)], false
	}
	for i := range n {
		var s measure.Submission
		s.ID, s.Accepted = ids[i], t0
		k := []int{1, 2, 2, 1, 2}[i%5]
		for range k {
			if a, remote := next(); remote {
				s.Remote = append(s.Remote, a)
			} else {
				s.Local = append(s.Local, a)
			}
		}
		l.Accepted(s)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	r := l.Reconcile()
	if r.Accepted != int64(n) || r.LocalDeliveries+r.RemoteDeliveries != int64(n)*8/5 {
		tb.Fatalf("Reconcile() = %+v after %d messages", r, n)
	}
	runtime.KeepAlive(l)
	runtime.KeepAlive(ids)
	return after.HeapAlloc - before.HeapAlloc
}

// TestMemoryPerMillion bounds the ledger's size: 1M messages with 1.6
// recipients each must fit in 48 MiB (16 bytes per message and per
// recipient, plus chunk slack and the user index).
func TestMemoryPerMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("adds a million messages")
	}
	b := fillMillion(t, 1_000_000)
	t.Logf("ledger heap per million messages (1.6 recipients each): %.1f MiB", float64(b)/(1<<20))
	if b > 48<<20 {
		t.Errorf("ledger holds %d bytes per million messages, want at most 48 MiB", b)
	}
}

func BenchmarkAccepted(b *testing.B) {
	l := NewLedger(run, users, measure.Discard)
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = id(uint64(i + 1))
	}
	b.ResetTimer()
	for i := range b.N {
		l.Accepted(measure.Submission{ID: ids[i], Accepted: t0, Local: users[:1], Remote: []string{"x@remote.test"}})
	}
}
