package certify

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// goodConfig meets every rule: embedded, 5m warm-up, 30m measurement, 4.8
// sessions per user-hour, a system description.
func goodConfig() *workload.Config {
	cfg := workload.DefaultConfig()
	cfg.Name, cfg.File = "fake", "fake.toml"
	cfg.Target.Embedded = true
	cfg.Users.Count = 2500 // 12,000 sessions/hour
	cfg.Phases.Warmup.Duration, cfg.Phases.Measurement.Duration = 5*time.Minute, 30*time.Minute
	cfg.Disclosure.System = "the embedded target"
	return cfg
}

// fake answers like a server of the given capacity (sessions/hour): a run
// above it has 10% slow operations. failCall, when >= 0, fails that call
// anyway; late gives every run's late sessions.
type fake struct {
	capacity float64
	failCall int
	late     int64
	cfgs     []*workload.Config
}

func (f *fake) run(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
	call := len(f.cfgs)
	f.cfgs = append(f.cfgs, cfg)
	rate := cfg.Load.SessionsPerHour
	fs := metrics.NewFunctionStats(measure.IMAPConnect, time.Second)
	for k := range 1000 {
		d := 10 * time.Millisecond
		if (rate > f.capacity || call == f.failCall) && k < 100 {
			d = 2 * time.Second
		}
		fs.Record(d, measure.OK)
	}
	achieved := rate * (1 - 0.001*float64(call%3))
	run := &report.Run{Tool: "mailbench", Version: "test", Name: cfg.Name, Config: cfg.File, Seed: cfg.Seed,
		Started: t0, Ended: t0.Add(time.Hour), Measurement: report.Duration(30 * time.Minute),
		SessionCounts: report.SessionCounts{TargetSessionsPerHour: rate, AchievedSessionsPerHour: achieved, SessionsPerUserHour: 4.8, Users: cfg.Users.Count, SessionsStarted: 1000, SessionsLate: f.late},

		Functions: map[measure.Function]*metrics.FunctionStats{measure.IMAPConnect: fs}}
	run.Evaluate(compliance.Rules{MaxErrorPercent: 1, Functions: []compliance.Rule{{Function: measure.IMAPConnect, Limit: time.Second, RequiredPercent: 95}}})
	return run, nil
}

func TestCertifyPasses(t *testing.T) {
	f := &fake{capacity: 13000, failCall: -1}
	cfg := goodConfig()
	res, err := Run(context.Background(), context.Background(), cfg, Options{Run: f.run, Disclosure: Disclosure{MailbenchVersion: "test", Machine: ProbeMachine()}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Certifiable() {
		t.Fatalf("not certifiable: %v\n%+v", res.Broken(), res.Checks)
	}
	wantLevels := []float64{80, 100, 100, 100, 120}
	seeds := map[int64]bool{}
	for i, c := range f.cfgs {
		// users = ⌈rate ÷ 4.8⌉ at every level, the rest of [users] as configured.
		wantUsers := cfg.Users
		wantUsers.Count = int(math.Ceil(12000 * wantLevels[i] / 100 / 4.8))
		if c.Load.SessionsPerHour != 12000*wantLevels[i]/100 || c.Seed != cfg.Seed || c.Users != wantUsers || res.Runs[i].Users != wantUsers.Count {
			t.Errorf("run %d: rate %v seed %d users %d", i+1, c.Load.SessionsPerHour, c.Seed, c.Users.Count)
		}
		if seeds[c.ScheduleSeed] || c.ScheduleSeed == 0 || c.ScheduleSeed != res.Runs[i].Seed {
			t.Errorf("run %d: schedule seed %d not distinct", i+1, c.ScheduleSeed)
		}
		seeds[c.ScheduleSeed] = true
	}
	// Iterations at 100% are runs 2, 3, 4 with achieved × (1 - 0.001 × call%3):
	// calls 1, 2, 3 → 0.999, 0.998, 1: the median is call 1 (run 2).
	if res.Median != 1 || res.Runs[1].Iteration != 1 {
		t.Errorf("median %d", res.Median)
	}
	if cfg.ScheduleSeed != 0 || cfg.Load.SessionsPerHour != 0 {
		t.Error("Run modified the config")
	}
	if len(res.Disclosure.ConfigHash) != 64 || res.Disclosure.System[0][1] != "the embedded target" {
		t.Errorf("disclosure %+v", res.Disclosure)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CERTIFIABLE: every run rule was met", "Median iteration at 100%: run 2", "PASS  warm-up length", "config sha256", "median iteration (run 2) in full"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var text2 bytes.Buffer
	if err := back.WriteText(&text2); err != nil {
		t.Fatal(err)
	}
	if text2.String() != text.String() {
		t.Errorf("from JSON:\n%s\nwant:\n%s", text2.String(), text.String())
	}
}

func TestCertifyFlagsBrokenRules(t *testing.T) {
	cfg := goodConfig()
	cfg.Phases.Warmup.Duration, cfg.Phases.Measurement.Duration = time.Minute, 10*time.Minute
	cfg.Load.SessionsPerUserHour = 6
	cfg.Load.SessionsPerHour = 12000
	cfg.Disclosure.System = ""
	cfg.Target.Embedded = false                        // a real server and no Prepare
	f := &fake{capacity: 13000, failCall: 2, late: 50} // iteration 2 at 100% fails; 5% late
	res, err := Run(context.Background(), context.Background(), cfg, Options{Run: f.run})
	if err != nil {
		t.Fatal(err)
	}
	if res.Certifiable() {
		t.Fatal("certifiable")
	}
	want := []string{RuleWarmup, RuleMeasurement, RuleUsers, RuleLevels, RuleMailboxes, RuleGenerator, RuleDisclosure}
	if got := res.Broken(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("broken %q, want %q", got, want)
	}
	var text bytes.Buffer
	_ = res.WriteText(&text)
	for _, w := range []string{"NOT CERTIFIABLE: broken rules: warm-up length", "FAIL  warm-up length: 1m0s (at least 5m0s)",
		"FAIL  80% and 100% compliant: run 3 (100% #2): FAIL failing: IMAP Connect", "GENERATOR-BOUND", "NOT VERIFIED"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
}

func TestCertifyPrepareAndErrors(t *testing.T) {
	cfg := goodConfig()
	cfg.Target.Embedded = false
	f := &fake{capacity: 13000, failCall: -1}
	prepared := 0
	run := func(stop, kill context.Context, c *workload.Config) (*report.Run, error) {
		if len(f.cfgs) == 4 {
			f.cfgs = append(f.cfgs, c)
			return nil, errors.New("connection refused")
		}
		return f.run(stop, kill, c)
	}
	res, err := Run(context.Background(), context.Background(), cfg, Options{Run: run,
		Prepare: func(ctx context.Context, c *workload.Config) error {
			prepared++
			if prepared == 1 {
				return errors.New("user1: INBOX has 3 messages, want 50")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if prepared != 5 {
		t.Errorf("prepared %d times", prepared)
	}
	// 120% could not be carried out: complete fails, levels do not (120% characterises).
	want := []string{RuleMailboxes, RuleComplete}
	got := res.Broken()
	if len(got) != 2 || !strings.Contains(strings.Join(got, "|"), RuleMailboxes) || !strings.Contains(strings.Join(got, "|"), RuleComplete) {
		t.Errorf("broken %q, want %q", got, want)
	}
}

// TestCertifyUsersRule: a population that does not match rate ÷ 4.8 (here a
// users file, which certify leaves as it is) breaks the users rule, naming
// the run and its users.
func TestCertifyUsersRule(t *testing.T) {
	f := &fake{capacity: 13000, failCall: -1}
	cfg := goodConfig()
	cfg.Users.File = "users.csv"
	cfg.Users.Count = 100
	res, err := Run(context.Background(), context.Background(), cfg, Options{Run: f.run, Disclosure: Disclosure{MailbenchVersion: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if c.Rule == RuleUsers {
			if c.Pass || !strings.Contains(c.Detail, "run 1 ran 100 users for 384 sessions/hour") || !strings.Contains(c.Detail, "users.file") {
				t.Errorf("users rule: pass %v, %q", c.Pass, c.Detail)
			}
			return
		}
	}
	t.Fatal("no users rule")
}
