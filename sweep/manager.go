package sweep

import (
	"context"

	"github.com/mailbench/mailbench/manager"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// ManagerRunner is the RunFunc of the CLI: manager.Run with opts.
func ManagerRunner(opts manager.Options) RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		return manager.Run(stop, kill, cfg, opts)
	}
}
