package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
)

func shardRuns(n int) []*Run {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var runs []*Run
	for i := range n {
		runs = append(runs, &Run{Name: "x", Seed: 7, SessionCounts: SessionCounts{SessionsStarted: 10, SessionsByType: map[string]int64{"send": int64(i + 1)}},
			Delivery: &delivery.Reconciliation{RemoteDeliveries: 3, PendingRemote: 3},
			Shard:    &ShardInfo{Index: i, Count: n, RunID: 0x1000 | uint32(i), ConfigHash: "abc", StartAt: at, ExternalSink: true}})
	}
	return runs
}

func TestMergeChecksShardsAreOneRun(t *testing.T) {
	m, err := Merge(shardRuns(3)...)
	if err != nil {
		t.Fatal(err)
	}
	if m.SessionsStarted != 30 || m.SessionsByType["send"] != 6 || m.Shard != nil {
		t.Fatalf("merged: %d started, %v", m.SessionsStarted, m.SessionsByType)
	}
	if m.Table.Compliant {
		t.Error("a merge with remote deliveries never reconciled against the sink is compliant")
	}
	for name, spoil := range map[string]func([]*Run) []*Run{
		"missing":     func(r []*Run) []*Run { return r[:2] },
		"twice":       func(r []*Run) []*Run { r[2].Shard.Index = 0; return r },
		"seed":        func(r []*Run) []*Run { r[1].Seed = 8; return r },
		"config":      func(r []*Run) []*Run { r[1].Shard.ConfigHash = "abd"; return r },
		"start":       func(r []*Run) []*Run { r[1].Shard.StartAt = r[1].Shard.StartAt.Add(time.Nanosecond); return r },
		"count":       func(r []*Run) []*Run { r[1].Shard.Count = 4; return r },
		"not a shard": func(r []*Run) []*Run { r[1].Shard = nil; return r },
	} {
		if _, err := Merge(spoil(shardRuns(3))...); err == nil {
			t.Errorf("%s: merged", name)
		}
	}
}

func TestShardJSONRoundTrip(t *testing.T) {
	r := shardRuns(2)[1]
	r.RemotePending = &delivery.Pending{RunID: 0x1001, Deliveries: []delivery.PendingDelivery{{Seq: 1, Key: 9, Accepted: 5}}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"remote_pending"`) {
		t.Fatal("no remote_pending in the JSON")
	}
	back, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if *back.Shard != *r.Shard || back.RemotePending.RunID != 0x1001 || len(back.RemotePending.Deliveries) != 1 || back.Delivery.PendingRemote != 3 {
		t.Fatalf("round trip: %+v %+v", back.Shard, back.RemotePending)
	}
}
