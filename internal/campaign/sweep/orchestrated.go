package sweep

import (
	"context"

	"github.com/mailbench/mailbench/internal/run/orchestrator"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// Orchestrated is the RunFunc of the CLI: each run is orchestrator.Run
// with opts.
func Orchestrated(opts orchestrator.Options) RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		return orchestrator.Run(stop, kill, cfg, opts)
	}
}
