package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/workload"
)

// TestShardsMergeIntoTheSingleRun runs one workload twice, each inside
// testing/synctest on an in-memory network: once as one process, and once
// as 4 shards (4 orchestrator runs with --shard i/4 and one common start)
// against ONE embedded target relaying to ONE standalone sink whose record
// the merge reconciles. The merged shards must have started exactly the
// single run's sessions, per type, run the same operations per function,
// and delivered the same mail, none lost.
func TestShardsMergeIntoTheSingleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("two 7 s runs")
	}
	const shards = 4
	var single, merged runCounts
	synctest.Test(t, func(t *testing.T) {
		cfg := shardTestConfig(t)
		ctx := context.Background()
		run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New(), ShardOptions: ShardOptions{StartAt: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		single = countsOf(t, run)
	})
	synctest.Test(t, func(t *testing.T) {
		cfg := shardTestConfig(t)
		ctx := context.Background()
		nw := memnet.New()
		start := time.Now()
		// The shared server: one embedded target, relaying to one sink
		// that records arrivals as `mailbench sink --json` does.
		rec := smtpsink.NewRecord()
		sink, sinkTLS, err := startSink(cfg, nw, nil, rec.Add)
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		users, err := cfg.LoadUsers()
		if err != nil {
			t.Fatal(err)
		}
		gen, err := message.NewGenerator(cfg.Seed, sizesOf(cfg))
		if err != nil {
			t.Fatal(err)
		}
		eps := endpoints.Settings(cfg)
		imapCfg, smtpCfg := eps.IMAP, eps.Submit
		tg, err := startEmbedded(cfg, nw, users, gen, sink, sinkTLS, &imapCfg, &smtpCfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()

		runs := make([]*report.Run, shards)
		var wg sync.WaitGroup
		for i := range shards {
			wg.Go(func() {
				r, err := Run(ctx, ctx, cfg, Options{Network: nw, ShardOptions: ShardOptions{
					Shard: schedule.Shard{Index: i, Count: shards}, StartAt: start, Target: tg}})
				if err != nil {
					t.Error(err)
					return
				}
				// Through the JSON, as shards on other machines would be.
				var buf bytes.Buffer
				if err := report.WriteJSON(&buf, r); err != nil {
					t.Error(err)
					return
				}
				if runs[i], err = report.ReadJSON(&buf); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		var buf bytes.Buffer
		if err := rec.WriteJSON(&buf, sink); err != nil {
			t.Fatal(err)
		}
		sr, err := delivery.ReadSinkReport(&buf)
		if err != nil {
			t.Fatal(err)
		}
		var pending int64
		for _, r := range runs {
			pending += r.Delivery.PendingRemote
			if r.Delivery.LostRemote != 0 {
				t.Errorf("shard %d/%d counted %d remote deliveries lost before reconciliation", r.Shard.Index, r.Shard.Count, r.Delivery.LostRemote)
			}
		}
		if pending == 0 {
			t.Error("no shard left a remote delivery pending: the test does not exercise the reconciliation")
		}
		m, err := report.MergeWithSink(sr, runs...)
		if err != nil {
			t.Fatal(err)
		}
		if m.Delivery.PendingRemote != 0 || m.Delivery.Lost != 0 {
			t.Errorf("merged: %d pending, %d lost", m.Delivery.PendingRemote, m.Delivery.Lost)
		}
		merged = countsOf(t, m)
	})
	sb, _ := json.MarshalIndent(single, "", " ")
	t.Logf("single run: %s", sb)
	mb, _ := json.MarshalIndent(merged, "", " ")
	if string(sb) != string(mb) {
		t.Errorf("4 shards merged differ from the single run:\nmerged %s\nsingle %s", mb, sb)
	}
}

// shardTestConfig is the quick workload with few users, so that a session's
// sender is often drawn among its recipients: the shards, whose sessions
// run as other users than the single run's, must still send the same mail.
func shardTestConfig(t *testing.T) *workload.Config {
	cfg := testconfig.Quick(t, 4*time.Second)
	cfg.Users.Count = 8
	return cfg
}

func sizesOf(cfg *workload.Config) []int {
	var sizes []int
	for _, s := range cfg.Messages.Sizes {
		sizes = append(sizes, int(s.Size))
	}
	return sizes
}
