package resume

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

func stepConfig(rate float64, seed int64) *workload.Config {
	c := workload.DefaultConfig()
	c.Name, c.Load.SessionsPerHour, c.ScheduleSeed = "r", rate, seed
	return c
}

func fakeRun(calls *int) campaign.RunFunc {
	return func(_, _ context.Context, cfg *workload.Config) (*report.Run, error) {
		*calls++
		return &report.Run{Tool: "mailbench", Name: cfg.Name, SessionCounts: report.SessionCounts{TargetSessionsPerHour: cfg.Load.SessionsPerHour},
			Started: time.Unix(1_800_000_000, 0).UTC(), Measurement: report.Duration(time.Minute)}, nil
	}
}

// TestResumeReplaysFinishedRuns: an interrupted campaign's finished runs
// come back from the state file, in order, without running; the next runs
// for real and is recorded.
func TestResumeReplaysFinishedRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	base := stepConfig(100, 1)
	j, err := Open(path, "size", "v1", ConfigHash(base))
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	run := j.Wrap(fakeRun(&calls))
	ctx := context.Background()
	for i, rate := range []float64{100, 200} {
		if _, err := run(ctx, ctx, stepConfig(rate, int64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	// A partial run is not finished: it is not recorded.
	partial := func(_, _ context.Context, cfg *workload.Config) (*report.Run, error) {
		return &report.Run{Partial: true}, nil
	}
	if _, err := j.Wrap(partial)(ctx, ctx, stepConfig(400, 3)); err != nil {
		t.Fatal(err)
	}

	again, err := Open(path, "size", "v1", ConfigHash(base))
	if err != nil {
		t.Fatal(err)
	}
	if again.Finished() != 2 {
		t.Fatalf("%d finished runs in the state, want 2", again.Finished())
	}
	calls = 0
	run = again.Wrap(fakeRun(&calls))
	for i, rate := range []float64{100, 200, 400} {
		r, err := run(ctx, ctx, stepConfig(rate, int64(i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if r.TargetSessionsPerHour != rate {
			t.Errorf("run %d: report of %v sessions/hour, want %v", i+1, r.TargetSessionsPerHour, rate)
		}
	}
	if calls != 1 || again.Replayed != 2 || !strings.Contains(again.Note(), "resumed 2 finished runs") {
		t.Errorf("%d real runs, %d replayed (%s); want 1 and 2", calls, again.Replayed, again.Note())
	}

	// The campaign taking another path is an error, not a silent mix.
	other, _ := Open(path, "size", "v1", ConfigHash(base))
	if _, err := other.Wrap(fakeRun(&calls))(ctx, ctx, stepConfig(150, 1)); err == nil || !strings.Contains(err.Error(), "another path") {
		t.Errorf("a different first run: %v", err)
	}
}

func TestResumeRefusesAnotherCampaign(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	base := stepConfig(100, 1)
	j, _ := Open(path, "sweep", "v1", ConfigHash(base))
	var calls int
	ctx := context.Background()
	if _, err := j.Wrap(fakeRun(&calls))(ctx, ctx, base); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, command, version, hash, want string
	}{
		{"another command", "size", "v1", ConfigHash(base), `not of "size"`},
		{"another version", "sweep", "v2", ConfigHash(base), "made by mailbench v1, this is v2"},
		{"another config", "sweep", "v1", ConfigHash(stepConfig(999, 1)), "made with another config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Open(path, c.command, c.version, c.hash); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open: %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "x.json"), "sweep", "v1", "h"); err != nil {
		t.Errorf("a missing state file: %v", err)
	}
}

func TestConfigHash(t *testing.T) {
	a, err := workload.ParseConfig("a.toml", []byte("# a comment\n[target]\nembedded = true\n[users]\npassword = \"x\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := workload.ParseConfig("b.toml", []byte("[users]\npassword = \"other\"\ncount = 100\n\n[target]\nembedded=true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ConfigHash(a) != ConfigHash(b) || len(ConfigHash(a)) != 64 {
		t.Errorf("layout, comments, defaults and the password change the hash: %s %s", ConfigHash(a), ConfigHash(b))
	}
	b.ScheduleSeed = 7
	if ConfigHash(a) != ConfigHash(b) {
		t.Error("ScheduleSeed changes the hash")
	}
	b.Load.SessionsPerHour = 1000
	if ConfigHash(a) == ConfigHash(b) {
		t.Error("a different rate hashes the same")
	}
}
