// Package campaign is what the commands that carry out several runs and
// judge them together (compare-tls, sweep, certify, size: the packages
// below this one) share: the callback that carries out one run.
package campaign

import (
	"context"

	"github.com/mailbench/mailbench/internal/run/orchestrator"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// RunFunc carries out one whole run of cfg and returns its report (its
// connect breakdown in report.Run.Connect). Cancelling stop ends the run's
// arrivals: it drains and its report is partial. Cancelling kill cuts it.
type RunFunc func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error)

// Orchestrated is the RunFunc of the CLI: each run is orchestrator.Run
// with opts.
func Orchestrated(opts orchestrator.Options) RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		return orchestrator.Run(stop, kill, cfg, opts)
	}
}
