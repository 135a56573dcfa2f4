package main

import (
	"context"
	"fmt"

	"github.com/mailbench/mailbench/internal/observe/promexport"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/metrics"
)

// runOptions are the library options of run, sweep and compare-tls: the
// progress display, the memory budget switch, and the live metrics
// endpoint when --metrics-listen is given (stopped by the returned func).
// A listen address that cannot be bound is a usage error, before any work.
func (f runFlags) runOptions(e *env, quiet bool, name string) (orchestrator.Options, func(), error) {
	opts := runProgress(e, quiet)
	opts.IgnoreMemoryBudget = f.IgnoreMemoryBudget
	if f.MetricsListen == "" {
		return opts, func() {}, nil
	}
	exp := promexport.New(name)
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := exp.Serve(ctx, f.MetricsListen)
	if err != nil {
		cancel()
		return opts, nil, usage(fmt.Errorf("--metrics-listen: %w", err))
	}
	if !quiet {
		fmt.Fprintf(e.stderr, "metrics: http://%s/metrics\n", addr)
	}
	opts.Observer = exp
	opts.ServerSample = func(p metrics.ServerPoint) { exp.SetServer(p.Values) }
	progress := opts.Progress
	opts.Progress = func(p session.RunProgress) {
		exp.SetSessions(promexport.Sessions{User: p.Sessions, Active: p.Active, Elapsed: p.Elapsed, Connected: p.Connected, ConnectedTarget: p.ConnectedTarget})
		if progress != nil {
			progress(p)
		}
	}
	return opts, cancel, nil
}
