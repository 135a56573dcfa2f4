package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/metrics"
)

// ShardInfo identifies one shard of a sharded run (docs/distributed.md):
// Merge accepts shards only all together — one seed, one config, one start
// instant, Count distinct indices 0..Count-1.
type ShardInfo struct {
	Index, Count int
	RunID        uint32    // the shard's message-id run id
	ConfigHash   string    // SHA-256 of the effective workload config
	StartAt      time.Time // the common start instant (the run's Window.Start)
	ExternalSink bool      // remote deliveries are reconciled against a sink's record
}

type jsonShard struct {
	Index        int    `json:"index"`
	Count        int    `json:"count"`
	RunID        string `json:"run_id"`
	ConfigHash   string `json:"config_hash"`
	StartAt      string `json:"start_at"`
	ExternalSink bool   `json:"external_sink"`
}

// MarshalJSON writes s with its run id in 8 hex digits.
func (s *ShardInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonShard{Index: s.Index, Count: s.Count, RunID: fmt.Sprintf("%08x", s.RunID), ConfigHash: s.ConfigHash,
		StartAt: fmtJSONTime(s.StartAt), ExternalSink: s.ExternalSink})
}

// UnmarshalJSON reads what MarshalJSON wrote, refusing what is not a
// shard (an index outside 0..count-1).
func (s *ShardInfo) UnmarshalJSON(b []byte) error {
	var j jsonShard
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = ShardInfo{Index: j.Index, Count: j.Count, ConfigHash: j.ConfigHash, ExternalSink: j.ExternalSink}
	if _, err := fmt.Sscanf(j.RunID, "%08x", &s.RunID); err != nil || len(j.RunID) != 8 {
		return fmt.Errorf("shard: run_id %q: want 8 hex digits", j.RunID)
	}
	var err error
	if s.StartAt, err = parseJSONTime(j.StartAt); err != nil {
		return fmt.Errorf("shard: start_at: %w", err)
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard: %d/%d is not a shard", s.Index, s.Count)
	}
	return nil
}

// checkShardSet refuses to merge shards that are not all of one run: when any
// run is a shard, every run must be, of the same seed, config hash, start
// instant and count N, and there must be N of them with indices 0..N-1.
func checkShardSet(runs []*Run) error {
	var first *ShardInfo
	for _, r := range runs {
		if r.Shard != nil {
			first = r.Shard
			break
		}
	}
	if first == nil {
		return nil
	}
	seen := make([]bool, first.Count)
	for i, r := range runs {
		s := r.Shard
		switch {
		case s == nil:
			return fmt.Errorf("merge: run %d (%s) is not a shard, others are", i, r.Name)
		case r.Seed != runs[0].Seed:
			return fmt.Errorf("merge: shard %d/%d has seed %d, shard %d/%d seed %d: not one run", s.Index, s.Count, r.Seed, runs[0].Shard.Index, runs[0].Shard.Count, runs[0].Seed)
		case s.ConfigHash != first.ConfigHash:
			return fmt.Errorf("merge: shard %d/%d ran another config (hash %.12s, not %.12s): not one run", s.Index, s.Count, s.ConfigHash, first.ConfigHash)
		case !s.StartAt.Equal(first.StartAt):
			return fmt.Errorf("merge: shard %d/%d started at %v, another at %v: not one run", s.Index, s.Count, s.StartAt, first.StartAt)
		case s.Count != first.Count:
			return fmt.Errorf("merge: shards of %d and of %d: not one run", s.Count, first.Count)
		case s.Index < 0 || s.Index >= s.Count:
			return fmt.Errorf("merge: shard %d/%d is not a shard", s.Index, s.Count)
		case seen[s.Index]:
			return fmt.Errorf("merge: shard %d/%d given twice", s.Index, s.Count)
		}
		seen[s.Index] = true
	}
	if len(runs) != first.Count {
		var missing []int
		for i, ok := range seen {
			if !ok {
				missing = append(missing, i)
			}
		}
		return fmt.Errorf("merge: %d of %d shards given; missing %v", len(runs), first.Count, missing)
	}
	return nil
}

// MergeWithSink merges the shards of one run whose remote mail went to a
// standalone sink (`mailbench sink --json`): each shard's pending remote
// deliveries are first reconciled against the sink's record by message id
// and recipient — relayed, lost, duplicated, corrupted, unexpected, and one
// Delivery Time (remote) per arrival into the functions — so that nothing
// relayed counts lost because it reached another process than its sender.
// The merged run's sink figures are the sink's. It doesn't modify its
// arguments.
func MergeWithSink(sink *delivery.SinkReport, runs ...*Run) (*Run, error) {
	if sink == nil {
		return nil, errors.New("merge: no sink report")
	}
	out := make([]*Run, len(runs))
	for i, r := range runs {
		if r == nil {
			return nil, fmt.Errorf("merge: run %d is nil", i)
		}
		c := *r
		out[i] = &c
		if r.RemotePending == nil {
			continue
		}
		if r.Delivery == nil {
			return nil, fmt.Errorf("merge: run %d has pending remote deliveries but no delivery accounting", i)
		}
		stats := metrics.NewStats(r.Table.Rules().Limits())
		if err := stats.MergeSnapshot(r.Functions); err != nil {
			return nil, fmt.Errorf("merge: run %d: %w", i, err)
		}
		d := r.Delivery.Add(delivery.ReconcileSink(r.RemotePending, sink.Arrivals, stats))
		c.Delivery, c.Functions, c.RemotePending = &d, stats.Snapshot(), nil
	}
	m, err := Merge(out...)
	if err != nil {
		return nil, err
	}
	m.Sink = SinkSummary{Messages: sink.Counts.Messages, Recipients: sink.Counts.Recipients, Bytes: sink.Counts.Bytes}
	if h := sink.RelayDelay; h != nil && h.TotalCount() > 0 {
		m.Sink.RelayDelay = Histogram{h}
		m.Sink.RelayDelayP50 = Duration(fromUS(h.ValueAtQuantile(50)))
		m.Sink.RelayDelayP95 = Duration(fromUS(h.ValueAtQuantile(95)))
		m.Sink.RelayDelayMax = Duration(fromUS(h.Max()))
	}
	return m, nil
}
