package sweep

import (
	"context"

	"github.com/mailbench/mailbench/internal/run/orchestrator"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// ManagerRunner is the RunFunc of the CLI: orchestrator.Run with opts.
func ManagerRunner(opts orchestrator.Options) RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		return orchestrator.Run(stop, kill, cfg, opts)
	}
}
