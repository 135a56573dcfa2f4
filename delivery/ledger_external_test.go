package delivery

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

func TestExternalSinkReconciliation(t *testing.T) {
	const run = 0x1234a003
	l := NewLedger(run, []string{"u1@local.example"}, nil)
	t0 := time.Unix(1_800_000_000, 0)
	l.Accepted(measure.Submission{ID: NewID(run, 1), Accepted: t0, Remote: []string{"a@remote.example", "b@remote.example"}})
	l.Accepted(measure.Submission{ID: NewID(run, 2), Accepted: t0, Remote: []string{"c@remote.example"}, Local: []string{"u1@local.example"}})
	l.Accepted(measure.Submission{ID: NewID(run, 5000), Accepted: t0.Add(time.Second), Remote: []string{"d@remote.example"}})
	if n, _ := l.Outstanding(); n != 5 {
		t.Fatalf("before SetExternalSink: %d outstanding, want the 4 remote and 1 local", n)
	}
	l.SetExternalSink()
	// Settling waits for the one local delivery only: the remote ones
	// arrive where this run cannot see them.
	if n, due := l.Outstanding(); n != 1 || !due.Equal(t0.Add(time.Duration(l.limitLocal))) {
		t.Fatalf("with an external sink: %d outstanding due %v, want the local one due at its limit", n, due)
	}
	l.Looked("u1@local.example", t0.Add(time.Minute)) // the checker looked, and the local copy was not there
	l.Finish()
	rec, p := l.ReconcileExternal()
	if rec.PendingRemote != 4 || rec.LostRemote != 0 || rec.Lost != 1 || rec.LostLocal != 1 {
		t.Fatalf("shard reconciliation %+v: want 4 pending, only the local one lost", rec)
	}
	// The sample names the missing local delivery, not the pending remote ones.
	if s := rec.MissingSample; len(s) != 1 || s[0].ID != NewID(run, 2) || s[0].Recipient != "u1@local.example" || s[0].Remote || !s[0].Accepted.Equal(t0) {
		t.Errorf("MissingSample = %+v, want message 2 to u1@local.example only", s)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Pending
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.RunID != run || len(back.Deliveries) != 4 || back.Deliveries[3].Seq != 5000 || back.Deliveries[3].Accepted != t0.Add(time.Second).UnixNano() {
		t.Fatalf("round trip: %+v", back)
	}
	if remoteKey("A@Remote.example") != RecipientKey("a@remote.example") {
		t.Fatal("the ledger's and the sink's recipient keys differ")
	}
	keys := func(addrs ...string) []uint32 {
		var k []uint32
		for _, a := range addrs {
			k = append(k, RecipientKey(a))
		}
		return k
	}
	arr := []RecordedArrival{
		{ID: NewID(run, 1), Received: t0.Add(2 * time.Second), Recipients: keys("a@remote.example")},
		{ID: NewID(run, 1), Received: t0.Add(3 * time.Second), Recipients: keys("a@remote.example", "b@remote.example")}, // a again: duplicate
		{ID: NewID(run, 2), Received: t0.Add(time.Second), Corrupt: true, Recipients: keys("c@remote.example")},
		{ID: NewID(run, 2), Received: t0, Recipients: keys("x@remote.example")},      // not sent there
		{ID: NewID(run^1, 5000), Received: t0, Recipients: keys("d@remote.example")}, // another shard's
	}
	var n int
	d := ReconcileSink(&back, arr, measure.ObserverFunc(func(o measure.Observation) {
		if o.Function != measure.DeliveryRemote {
			t.Errorf("observation of %s", o.Function)
		}
		n++
	}))
	got := rec.Add(d)
	if got.PendingRemote != 0 || got.RelayedRemote != 3 || got.LostRemote != 1 || got.Lost != 2 ||
		got.Duplicated != 1 || got.Corrupted != 1 || got.Unexpected != 1 || n != 3 {
		t.Fatalf("after the sink: %+v (%d observations)", got, n)
	}
}
