package compare

import (
	"context"

	"github.com/mailbench/mailbench/bench"
	"github.com/mailbench/mailbench/connstats"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// BenchRunner is the RunFunc of the CLI: bench.Run with opts, and the
// run's connect breakdown.
func BenchRunner(opts bench.Options) RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, *connstats.Snapshot, error) {
		run, err := bench.Run(stop, kill, cfg, opts)
		if err != nil {
			return nil, nil, err
		}
		return run, connectOf(run), nil
	}
}

// connectOf returns the connect breakdown of run's measurement window.
//
// TODO(lead): bench does not measure it yet. Once bench.Run feeds a
// connstats.Breakdown from the recorder's measurement window and stores its
// Snapshot in report.Run (e.g. a field `Connect *connstats.Snapshot`),
// return run.Connect here.
func connectOf(run *report.Run) *connstats.Snapshot {
	_ = run
	return nil
}
