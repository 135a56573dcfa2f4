package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/workload"
)

// A run honours its measurement window at any rate: at 48 sessions/hour
// the next arrival after the last one of a 70 s window usually falls after
// the window, and the run must still run the whole window, not move to
// ramp-down at the last arrival; the achieved rate is over the window it
// really ran.
func TestRunHonoursWindowAtLowRate(t *testing.T) {
	for _, rate := range []float64{48, 1} { // 1/h: most likely no arrival at all
		t.Run(fmt.Sprintf("%v-per-hour", rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := shortQuick(t, 70*time.Second)
				cfg.Load.SessionsPerHour = rate
				ctx := context.Background()
				start := time.Now()
				run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
				if err != nil {
					t.Fatal(err)
				}
				ran := time.Since(start)
				t.Logf("rate %v: ran %v, started %d", rate, ran, run.SessionsStarted)
				wantEnd := cfg.Phases.Warmup.Duration + cfg.Phases.Measurement.Duration
				if ran < wantEnd {
					t.Errorf("rate %v/h: the run ended %v after its start, before the end of its measurement window at %v", rate, ran, wantEnd)
				}
				if got := run.Ended.Sub(run.Started); got < wantEnd {
					t.Errorf("rate %v/h: report window %v, want at least %v", rate, got, wantEnd)
				}
				if run.Partial {
					t.Errorf("rate %v/h: partial report: %s", rate, run.PartialReason)
				}
				want := float64(run.SessionsStarted) / cfg.Phases.Measurement.Hours()
				if math.Abs(run.AchievedSessionsPerHour-want) > 1e-9 {
					t.Errorf("rate %v/h: achieved %v/h for %d sessions, want %v over the 70 s window", rate, run.AchievedSessionsPerHour, run.SessionsStarted, want)
				}
			})
		})
	}
}

// A run whose estimated memory exceeds the machine's
// available memory is refused before any work starts, as a UsageError
// (exit 2) naming the figures and how to lower them.
func TestRunRefusesPlanAboveAvailableMemory(t *testing.T) {
	defer func(f func() (int64, error)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, error) { return 1 << 30, nil } // 1 GiB
	cfg := shortQuick(t, time.Second)
	cfg.Users.Count = 20000
	ctx := context.Background()
	_, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
	var ce *UsageError
	if !errors.As(err, &ce) {
		t.Fatalf("Run() = %v, want a UsageError", err)
	}
	for _, want := range []string{"1 GiB available", "fewer users", "real server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// A run whose expected descriptors exceed the process's limit is refused
// before any work starts (UsageError, exit 2) naming the limit and how to
// raise it; one that fits but could exceed it at its caps runs, with the
// warning in its report.
func TestRunChecksDescriptors(t *testing.T) {
	defer func(f, g func() (int, error)) { openFileLimit, localPorts = f, g }(openFileLimit, localPorts)
	localPorts = func() (int, error) { return 0, nil } // unknown: not checked
	cfg := shortQuick(t, time.Second)
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := plan.Sockets()
	openFileLimit = func() (int, error) { return s.Expected - 1, nil }
	_, err = New(context.Background(), cfg, Options{Network: memnet.New()})
	var ce *UsageError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "RLIMIT_NOFILE") || !strings.Contains(err.Error(), "ulimit -n") {
		t.Fatalf("New() with %d descriptors for an expected %d = %v, want a UsageError naming the limit", s.Expected-1, s.Expected, err)
	}
	if s.AtCap > s.Expected {
		openFileLimit = func() (int, error) { return s.Expected, nil }
		e, err := New(context.Background(), cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if len(e.warnings) != 1 || !strings.Contains(e.warnings[0], "at its concurrency caps") {
			t.Errorf("warnings %q: want the one at the caps", e.warnings)
		}
	}
}
