package tlscompare

import (
	"context"

	"github.com/mailbench/mailbench/internal/run/orchestrator"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// Orchestrated is the RunFunc of the CLI: orchestrator.Run with opts, and the
// run's connect breakdown.
func Orchestrated(opts orchestrator.Options) RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, *metrics.ConnectSnapshot, error) {
		run, err := orchestrator.Run(stop, kill, cfg, opts)
		if err != nil {
			return nil, nil, err
		}
		return run, connectOf(run), nil
	}
}

// connectOf returns the connect breakdown of run's measurement window.
func connectOf(run *report.Run) *metrics.ConnectSnapshot { return run.Connect }
