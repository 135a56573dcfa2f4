package certify_test

import (
	"context"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/certify"
	"github.com/mailbench/mailbench/internal/campaign/sweep"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/workload"
)

// certConfig is the quick workload under the run rules' numbers: warm-up
// 5 min, measurement 30 min, 20 users × 4.8 sessions/hour = 96
// sessions/hour (the 120% run: 115). The phases are fake time inside
// synctest; what costs real time is the sessions, about 60 a run.
func certConfig(t testing.TB) *workload.Config {
	cfg := testconfig.Quick(t, 30*time.Minute)
	cfg.Phases.Warmup.Duration = 5 * time.Minute
	cfg.Phases.Rampdown.Duration = 30 * time.Second
	cfg.Phases.Settle.Duration = 10 * time.Second
	cfg.Load.ThinkTime.Duration = time.Second
	cfg.Load.OpTimeout.Duration = 10 * time.Second
	cfg.Load.SessionsPerUserHour = 4.8
	cfg.Load.SessionsPerHour = 0 // users × 4.8
	cfg.Disclosure.System = "mailbench's embedded target (in memory, synctest over memnet)"
	return cfg
}

func certifyEmbedded(t *testing.T, cfg *workload.Config) *certify.Result {
	t.Helper()
	timer := time.AfterFunc(2*time.Minute, func() { // real time: a wedged bubble
		debug.SetTraceback("all")
		panic(t.Name() + ": did not finish within 2 minutes of real time")
	})
	defer timer.Stop()
	var res *certify.Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = certify.Run(context.Background(), context.Background(), cfg, certify.Options{
			Run: campaign.Orchestrated(orchestrator.Options{Network: memnet.New()}),
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	var b strings.Builder
	_ = res.WriteText(&b)
	t.Logf("\n%s", b.String())
	return res
}

// A certification whose workload breaks a run rule
// (sessions_per_user_hour 6, not 4.8) against the embedded target: the
// five runs are carried out and pass, and the result is NOT CERTIFIABLE
// with exactly that rule named.
func TestCertifyEmbeddedFlagsBrokenRule(t *testing.T) {
	if testing.Short() {
		t.Skip("five whole runs")
	}
	cfg := certConfig(t)
	cfg.Load.SessionsPerUserHour = 6
	start := time.Now()
	res := certifyEmbedded(t, cfg)
	t.Logf("%v of real time", time.Since(start).Round(time.Millisecond))
	if res.Certifiable() {
		t.Fatal("certifiable with sessions_per_user_hour = 6")
	}
	if got := res.Broken(); !slices.Equal(got, []string{certify.RuleUsers}) {
		t.Errorf("broken rules %q, want only %q", got, certify.RuleUsers)
	}
	if len(res.Runs) != 5 || res.Median < 0 {
		t.Fatalf("%d runs, median %d", len(res.Runs), res.Median)
	}
	if res.BaseRate != 120 || res.Runs[0].Rate != 96 || res.Runs[4].Rate != 144 {
		t.Errorf("rates: base %v, 80%% %v, 120%% %v; want 120, 96, 144", res.BaseRate, res.Runs[0].Rate, res.Runs[4].Rate)
	}
}

// The same workload under every rule: certifiable on the embedded target
// (no rule needs a real server: the mailbox rule counts a fresh embedded
// target as initialised and verified, and the generator is never late
// inside synctest).
func TestCertifyEmbeddedPassesEveryRule(t *testing.T) {
	if testing.Short() {
		t.Skip("five whole runs")
	}
	start := time.Now()
	res := certifyEmbedded(t, certConfig(t))
	t.Logf("%v of real time", time.Since(start).Round(time.Millisecond))
	if !res.Certifiable() {
		t.Fatalf("not certifiable: broken %q", res.Broken())
	}
	seeds := map[int64]bool{}
	for i, r := range res.Runs {
		if r.Run == nil || r.Verdict() != sweep.Pass || !r.PrepareOK {
			t.Errorf("run %d (%g%%): verdict %s, prepared %q", i+1, r.Level, r.Verdict(), r.Prepared)
		}
		if seeds[r.Seed] {
			t.Errorf("run %d: seed %d used twice", i+1, r.Seed)
		}
		seeds[r.Seed] = true
	}
	if m := res.Runs[res.Median]; m.Level != certify.IterationsLevel {
		t.Errorf("median run at %g%%", m.Level)
	}
}
