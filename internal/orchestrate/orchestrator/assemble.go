package orchestrator

import (
	"fmt"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/workload"
)

// buildReport assembles the run's report from what the runner, the recorder
// and the sink measured. It doesn't perform I/O.
func buildReport(cfg *workload.Config, plan *workload.Plan, res *session.RunResult, rec *metrics.Recorder, sink *smtpsink.Sink) *report.Run {
	meas := cfg.Phases.Measurement.Duration
	// The rate is over the window the run really measured: until the end
	// of measurement, or until the arrivals ended if that was earlier (a
	// stopped run).
	window := min(max(res.StopAt.Sub(res.MeasureStart), 0), res.MeasureEnd.Sub(res.MeasureStart))
	run := &report.Run{
		Tool: "mailbench", Version: Version, Config: cfg.File, Name: cfg.Name, Seed: cfg.Seed,
		Started: res.Start, Ended: res.Ended,
		Warmup: report.Duration(cfg.Phases.Warmup.Duration), Measurement: report.Duration(meas), Rampdown: report.Duration(cfg.Phases.Rampdown.Duration),
		Target: report.Target{
			IMAP: cfg.Target.IMAP.Address, SMTP: cfg.Target.SMTP.Address, Embedded: cfg.Target.Embedded,
		},
		// A shard offers its share of the arrivals (every Shards-th).
		SessionCounts: report.SessionCounts{
			TargetSessionsPerHour: cfg.TargetRate() / float64(max(res.Shards, 1)),
			SessionsPerUserHour:   cfg.Load.SessionsPerUserHour,
			SessionsScheduled:     res.Sessions.Scheduled,
			SessionsStarted:       res.Sessions.Started,
			SessionsLoggedIn:      res.SessionsLoggedIn,
			SessionsCompleted:     res.SessionsCompleted,
			SessionsFailed:        res.SessionsFailed,
			SessionsLate:          res.Sessions.Late,
			SessionsDropped:       res.Sessions.Dropped,
			SessionsByType:        map[string]int64{},
			MaxConcurrentObserved: int(res.Sessions.MaxActive),
			SessionsDroppedAtCap:  res.Sessions.DroppedAtCap,
			MaxConcurrentSessions: cfg.Load.MaxConcurrent,
			Users:                 res.Users,
			MaxDroppedPercent:     cfg.Compliance.MaxDroppedPercent,
		},

		Inbound: report.InboundSummary{TargetPerHour: cfg.TargetRate() / float64(max(res.Shards, 1)) * cfg.Load.InboundPerSession,
			Scheduled: res.Inbound.Scheduled, Started: res.Inbound.Started, Late: res.Inbound.Late, Dropped: res.Inbound.Dropped,
			DroppedAtCap: res.Inbound.DroppedAtCap, MaxConcurrent: cfg.StreamMaxConcurrent()},

		Functions: rec.Stats(workload.Measurement).Snapshot(),
	}
	if cfg.Target.Embedded {
		run.Target.IMAP, run.Target.SMTP = "embedded", "embedded"
	}
	if window > 0 {
		// Achieved: sessions the server let in, not the ones mailbench started.
		run.AchievedSessionsPerHour = float64(res.SessionsLoggedIn) / window.Hours()
	}
	run.SessionsDroppedUsersBusy = res.Sessions.Dropped - res.Sessions.DroppedAtCap
	if c := res.ClientSends; c.Scheduled > 0 || c.Dropped > 0 {
		run.Sends = &report.InboundSummary{TargetPerHour: res.ClientSendsPerHour,
			Scheduled: c.Scheduled, Started: c.Started, Late: c.Late, Dropped: c.Dropped,
			DroppedAtCap: c.DroppedAtCap, MaxConcurrent: cfg.StreamMaxConcurrent()}
	}
	if plan != nil {
		run.PlannedSessionDuration = report.Duration(plan.MeanSessionDuration.Truncate(time.Microsecond))
		run.PlannedConcurrency = run.TargetSessionsPerHour / 3600 * plan.MeanSessionDuration.Seconds()
	}
	if res.Sessions.Started > 0 {
		run.MeanSessionDuration = report.Duration((res.SessionTime / time.Duration(res.Sessions.Started)).Truncate(time.Microsecond))
	}
	if u, ok := run.UsersFigure(); ok {
		run.EquivalentUsers = float64(u)
	}
	for k, n := range res.SessionsByKind {
		run.SessionsByType[string(k)] = n
	}
	if sink != nil {
		run.Target.Sink = sink.Addr().String()
		c := sink.Counts()
		h := sink.RelayDelay()
		run.Sink = report.SinkSummary{Messages: c.Messages, Recipients: c.Recipients, Bytes: c.Bytes, RelayDelay: report.Histogram{Histogram: h},
			Foreign: c.Foreign, ForeignRuns: sink.ForeignRuns()}
		if c.Foreign > 0 {
			run.Warnings = append(run.Warnings, fmt.Sprintf("the sink received %d foreign messages (not this run's: %s): counted apart, in none of its figures",
				c.Foreign, report.ForeignRunsText(run.Sink.ForeignRuns)))
		}
		if h.TotalCount() > 0 {
			run.Sink.RelayDelayP50 = report.Duration(us(h.ValueAtQuantile(50)))
			run.Sink.RelayDelayP95 = report.Duration(us(h.ValueAtQuantile(95)))
			run.Sink.RelayDelayMax = report.Duration(us(h.Max()))
		}
	}
	if res.CutSessions > 0 {
		run.Warnings = append(run.Warnings, plural(res.CutSessions, "session was", "sessions were")+" still running at the end of ramp-down: cut")
	}
	if c := res.Sessions; c.Dropped > 0 {
		var why []string
		if c.DroppedAtCap > 0 {
			why = append(why, fmt.Sprintf("%d at the generator's cap of %d concurrent sessions (load.max_concurrent_sessions)", c.DroppedAtCap, cfg.Load.MaxConcurrent))
		}
		if busy := c.Dropped - c.DroppedAtCap; busy > 0 {
			why = append(why, fmt.Sprintf("%d because all %d users were already in a session (add users)", busy, res.Users))
		}
		run.Warnings = append(run.Warnings, plural(c.Dropped, "session", "sessions")+" could not start, so the load offered was below the target: "+strings.Join(why, "; "))
	}
	for _, st := range run.MailStreams() {
		if l := run.StreamDropLine(st); l != "" {
			run.Warnings = append(run.Warnings, l)
		}
	}
	run.Timeline = rec.Timeline()
	for _, s := range rec.ErrorSamples() {
		run.Warnings = append(run.Warnings, "error sample: "+s)
	}
	return run
}

// generatorHealth is how the generator fared: lateness from the runner's
// schedulers, CPU and GC from the process over the window, and the
// operations timed impossibly long.
func generatorHealth(cfg *workload.Config, res *session.RunResult, use metrics.GeneratorUse, useOK bool, stalls *metrics.StallGuard) *report.GeneratorHealth {
	g := &report.GeneratorHealth{
		LateTolerance:   cfg.Load.LateTolerance.Duration,
		SessionLateness: res.SessionLateness, InboundLateness: res.InboundLateness,
		Stalls: stalls.Count(), StallLimit: stalls.Limit, WorstStall: stalls.Worst(),
	}
	if useOK {
		g.CPUKnown, g.CPU, g.CPUWindow, g.Cores = use.CPUKnown, use.CPU, use.Window, use.Cores
		g.GCPause, g.GCCycles = use.GCPause, use.GCCycles
	}
	return g
}

func us(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
