package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/report"
)

// shardFlags are run's flags for one shard of a sharded run
// (docs/distributed.md); embedded in runCmd.
type shardFlags struct {
	Shard         string `name:"shard" placeholder:"i/N" help:"Run shard i of N (0-based): every N-th arrival of the one schedule the seed gives, and users u with u mod N = i (docs/distributed.md)."`
	StartAt       string `name:"start-at" placeholder:"RFC3339" help:"Begin the warm-up at this instant (common to all shards), e.g. 2026-03-01T10:00:00Z; within a day of now unless --force-start-at."`
	ForceStartAt  bool   `name:"force-start-at" help:"Accept a --start-at more than a day from now (in the past or the future)."`
	NoVerdictExit bool   `name:"no-verdict-exit" help:"Exit 0 for a run carried out to its end even when not compliant: a shard's verdict is provisional, the merge decides (Kubernetes Jobs would retry exit 1)."`
	ExternalSink  bool   `name:"external-sink" help:"Remote mail goes to a 'mailbench sink --json' elsewhere: start no sink, record remote deliveries as pending (reconciled by 'mailbench report --sink')."`
}

// maxStartAtOffset bounds --start-at around now: a shard that would wait a
// year, or start a year late, is a typo.
const maxStartAtOffset = 24 * time.Hour

// options turns the flags into orchestrator.ShardOptions.
func (f shardFlags) options() (orchestrator.ShardOptions, error) {
	var o orchestrator.ShardOptions
	var err error
	if o.Shard, err = schedule.ParseShard(f.Shard); err != nil {
		return o, usage(fmt.Errorf("--shard: %w", err))
	}
	if f.StartAt != "" {
		if o.StartAt, err = time.Parse(time.RFC3339Nano, f.StartAt); err != nil {
			return o, usage(fmt.Errorf("--start-at %q: want an RFC 3339 time such as %s", f.StartAt,
				time.Now().UTC().Add(time.Minute).Truncate(time.Minute).Format(time.RFC3339)))
		}
		if off := time.Until(o.StartAt); (off > maxStartAtOffset || off < -maxStartAtOffset) && !f.ForceStartAt {
			return o, usage(fmt.Errorf("--start-at %s is %v from now: out of range: must be within %v of now (--force-start-at accepts it)",
				f.StartAt, off.Round(time.Second), maxStartAtOffset))
		}
		if late := time.Since(o.StartAt); late > time.Second {
			fmt.Fprintf(os.Stderr, "mailbench: warning: --start-at is %v in the past: the first arrivals start late\n", late.Round(time.Millisecond))
		}
	} else if !o.Shard.Whole() {
		return o, usage(errors.New("--shard needs --start-at: the shards' windows and run id come from one common start instant"))
	}
	o.ExternalSink = f.ExternalSink
	return o, nil
}

// sinkJSONFlags are sink's flags to record arrivals; embedded in sinkCmd.
type sinkJSONFlags struct {
	JSON string `name:"json" placeholder:"FILE" help:"Record every arrival by message id (no bodies) and write the sink's report to FILE on exit, for 'mailbench report --sink'."`
}

// reportSinkFlags are report's flags to reconcile shards against a sink.
type reportSinkFlags struct {
	SinkReport string `name:"sink" placeholder:"FILE" type:"existingfile" help:"The sink's report ('mailbench sink --json'): reconcile every shard's remote deliveries against it before merging."`
}

// mergeWithSink merges runs, reconciling them against the sink's report
// when --sink was given; ok false: not asked.
func (f reportSinkFlags) mergeWithSink(runs []*report.Run) (*report.Run, bool, error) {
	if f.SinkReport == "" {
		return nil, false, nil
	}
	fh, err := os.Open(f.SinkReport)
	if err != nil {
		return nil, true, usage(err)
	}
	defer fh.Close()
	sr, err := delivery.ReadSinkReport(fh)
	if err != nil {
		return nil, true, usage(fmt.Errorf("%s: %w", f.SinkReport, err))
	}
	m, err := report.MergeWithSink(sr, runs...)
	if err != nil {
		return nil, true, usage(err)
	}
	return m, true, nil
}
