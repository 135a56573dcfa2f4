package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/internal/status"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// clearingWriter erases the status line before anything is written to
// the other stream of the same terminal (the report on stdout).
type clearingWriter struct {
	w io.Writer
	d *status.Display
}

func (c clearingWriter) Write(p []byte) (int, error) {
	c.d.Clear()
	return c.w.Write(p)
}

// runStatus turns a run's progress into status frames: it keeps the last
// operation count to give operations per second.
type runStatus struct {
	mu      sync.Mutex
	lastOps int64
	lastAt  time.Time
	now     func() time.Time
}

// frame is the status line of p. It doesn't perform I/O.
func (s *runStatus) frame(p session.RunProgress) status.Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	f := status.Frame{
		Phase: string(p.Phase), Elapsed: p.Elapsed, Left: p.Total - p.Elapsed,
		PerHour: p.PerHour, TargetPerHour: p.TargetPerHour,
		Late: p.Sessions.Late, Dropped: p.Sessions.Dropped, Active: p.Active,
		Connected: p.Connected, ConnectedTarget: p.ConnectedTarget, Awaiting: p.Awaiting,
	}
	if p.Phase == workload.Settle {
		f.PerHour, f.TargetPerHour = 0, 0
	}
	if !s.lastAt.IsZero() {
		if dt := now.Sub(s.lastAt).Seconds(); dt > 0 && p.Operations >= s.lastOps {
			f.OpsPerSecond = float64(p.Operations-s.lastOps) / dt
		}
	}
	s.lastOps, s.lastAt = p.Operations, now
	for _, c := range measure.ErrorClasses {
		if n := p.Errors[c]; n > 0 {
			f.Errors = append(f.Errors, status.ClassCount{Class: string(c), Count: n})
		}
	}
	if w := p.Worst; w != nil {
		f.Worst = &status.Worst{Function: string(w.Function), P95: w.P95, Limit: w.Limit}
	}
	return f
}

// showRun returns the progress callback that draws a run's status line.
func showRun(d *status.Display) func(session.RunProgress) {
	s := &runStatus{now: time.Now}
	return func(p session.RunProgress) { d.Show(s.frame(p)) }
}

// jobFrame is the status line of an init, clean or verify job. It doesn't
// perform I/O.
func jobFrame(p populate.JobProgress) status.Frame {
	f := status.Frame{Phase: p.Job, Elapsed: p.Elapsed, Left: -1, Done: p.Done, Total: p.Total, Unit: p.Unit}
	if s := p.Elapsed.Seconds(); s > 0 {
		f.Rate = float64(p.Done) / s
	}
	if f.Rate > 0 && p.Total > 0 {
		f.Left = time.Duration(float64(p.Total-p.Done) / f.Rate * float64(time.Second))
	}
	return f
}

// showJob returns the progress callback of a job: the status line as it
// goes, and one plain line where it ended.
func showJob(d *status.Display) func(populate.JobProgress) {
	return func(p populate.JobProgress) {
		if !p.Final {
			d.Show(jobFrame(p))
			return
		}
		how := "done"
		if !p.OK {
			how = "stopped"
		}
		rate := 0.0
		if s := p.Elapsed.Seconds(); s > 0 {
			rate = float64(p.Done) / s
		}
		fmt.Fprintf(d.Log(), "%s %s: %s/%s %s in %v, %s/s\n", p.Job, how, status.Count(p.Done), status.Count(p.Total), p.Unit,
			p.Elapsed.Round(100*time.Millisecond), status.Count(int64(rate+0.5)))
	}
}
