// Package campaign is what the commands that carry out several runs and
// judge them together (compare-tls, sweep, certify, size: the packages
// below this one) share: the callback that carries out one run.
package campaign

import (
	"context"
	"io"

	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
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

// Envelope is how every campaign's JSON result begins: its schema and
// version, the workload's name and file, and whether it ran against the
// embedded demo target. Each result embeds it, so its keys come first.
type Envelope struct {
	Schema        string `json:"schema"` // "mailbench-sweep", "mailbench-size", ...
	SchemaVersion int    `json:"schema_version"`
	Name          string `json:"name"`
	Config        string `json:"config"`
	Embedded      bool   `json:"embedded"`
}

// Result is what every campaign's result offers its command: the text,
// and the runs that produced a report with a label each (for the HTML
// page and the side-by-side table).
type Result interface {
	WriteText(w io.Writer) error
	RunsAndLabels() ([]*report.Run, []string)
}
