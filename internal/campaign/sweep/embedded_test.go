package sweep

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/workload"
)

// shortQuick is the shipped quick workload shortened for tests.
func shortQuick(t *testing.T) *workload.Config {
	cfg := testconfig.Quick(t, 2*time.Second)
	// Ramp-down no shorter than op_timeout (workload validation).
	cfg.Phases.Rampdown.Duration, cfg.Load.OpTimeout.Duration = time.Second, time.Second
	cfg.Phases.Settle.Duration = 500 * time.Millisecond
	return cfg
}

// TestSweepEmbedded runs a real two-level sweep against the embedded target.
func TestSweepEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two whole benchmarks")
	}
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t)
		ctx := context.Background()
		res, err := Run(ctx, ctx, cfg, Options{Levels: []float64{50, 100}, Iterations: 1, Run: campaign.Orchestrated(orchestrator.Options{Network: memnet.New()})})
		if err != nil {
			t.Fatal(err)
		}
		if res.Partial || len(res.Levels) != 2 || !res.Embedded {
			t.Fatalf("result: partial %v, %d levels, embedded %v", res.Partial, len(res.Levels), res.Embedded)
		}
		for i, want := range []float64{18000, 36000} {
			l := res.Levels[i]
			it := l.Iterations[0]
			if it.Err != "" || it.Run == nil {
				t.Fatalf("level %g%%: %q", l.Percent, it.Err)
			}
			if it.Run.TargetSessionsPerHour != want || l.TargetPerHour != want {
				t.Errorf("level %g%%: the run's target %v (level %v), want %v", l.Percent, it.Run.TargetSessionsPerHour, l.TargetPerHour, want)
			}
			if it.Run.SessionsStarted == 0 || l.AchievedPerHour != it.Run.AchievedSessionsPerHour || l.WorstFunction == "" {
				t.Errorf("level %g%%: %d sessions, achieved %v (run %v), worst %q", l.Percent,
					it.Run.SessionsStarted, l.AchievedPerHour, it.Run.AchievedSessionsPerHour, l.WorstFunction)
			}
		}
		var buf bytes.Buffer
		if err := res.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "18,000") || !strings.Contains(buf.String(), "Capacity: ") {
			t.Errorf("text:\n%s", buf.String())
		}
		t.Logf("\n%s", buf.String())
	})
}
