package compare

import (
	"context"

	"github.com/mailbench/mailbench/connstats"
	"github.com/mailbench/mailbench/manager"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// ManagerRunner is the RunFunc of the CLI: manager.Run with opts, and the
// run's connect breakdown.
func ManagerRunner(opts manager.Options) RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, *connstats.Snapshot, error) {
		run, err := manager.Run(stop, kill, cfg, opts)
		if err != nil {
			return nil, nil, err
		}
		return run, connectOf(run), nil
	}
}

// connectOf returns the connect breakdown of run's measurement window.
func connectOf(run *report.Run) *connstats.Snapshot { return run.Connect }
