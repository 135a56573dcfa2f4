package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// againstDemoTarget is cfg pointed at a demo target of its own, started
// for the test, that relays remote mail to the sink on cfg's
// sink.listen (a fixed free port).
func againstDemoTarget(t *testing.T, cfg *workload.Config) *workload.Config {
	t.Helper()
	c := *cfg
	c.Sink.Listen = testutil.FreeAddr(t)
	tg, err := orchestrator.StartDemoTarget(&c, "127.0.0.1:0", "127.0.0.1:0", c.Sink.Listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	c.Target.Embedded = false
	c.Target.IMAP.Address, c.Target.SMTP.Address = tg.IMAPAddr(), tg.SMTPAddr()
	c.Target.Inbound.Address = ""
	return &c
}

// shardRunner is the RunShardFunc of mailbench run --manager.
func shardRunner(stop, kill context.Context, cfg *workload.Config, sh schedule.Shard, at time.Time) (*report.Run, error) {
	return orchestrator.Run(stop, kill, cfg, orchestrator.Options{ShardOptions: orchestrator.ShardOptions{Shard: sh, StartAt: at, ExternalSink: true}})
}

type counts struct {
	Started   int64            `json:"started"`
	ByType    map[string]int64 `json:"by_type"`
	Functions map[string]int64 `json:"functions"`
	Delivery  map[string]int64 `json:"delivery"`
}

func countsOf(t *testing.T, r *report.Run) counts {
	t.Helper()
	c := counts{Started: r.SessionsStarted, ByType: r.SessionsByType, Functions: map[string]int64{}}
	for _, f := range r.Functions {
		c.Functions[string(f.Function)] = f.Operations
	}
	b, _ := json.Marshal(r.Delivery)
	if err := json.Unmarshal(b, &c.Delivery); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"accepted_bytes", "timed_by_internaldate", "timed_by_announcement", "timed_by_observation", "late", "late_local", "late_remote"} {
		delete(c.Delivery, k) // timing, not the seed's
	}
	return c
}

// TestManagedRunMatchesTheSingleRun carries out one workload twice over
// loopback, each time against a fresh demo target of its own: once as one
// run with its own sink, once through a manager (holding the sink) and 3
// generators that registered over HTTP. The manager's merged report must
// have started the single run's sessions per type and run its operations
// per function, with the same deliveries, none lost or pending.
func TestManagedRunMatchesTheSingleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of 6 s")
	}
	base := testconfig.Quick(t, 3*time.Second)
	base.Phases.Warmup.Duration = 0

	single := againstDemoTarget(t, base)
	ctx := context.Background()
	t0 := time.Now()
	one, err := orchestrator.Run(ctx, ctx, single, orchestrator.Options{})
	t.Logf("single run: %v", time.Since(t0))
	if err != nil {
		t.Fatal(err)
	}

	cfg := againstDemoTarget(t, base)
	t.Setenv("MB_TEST_PASSWORD", cfg.Users.Password)
	cfg.Users.PasswordEnv = "MB_TEST_PASSWORD"
	hash, err := ConfigDigest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Generators: 3, Token: testToken, Version: "v-test", ConfigHash: hash,
		StartDelay: 1500 * time.Millisecond, StartSink: StartSink, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	var wg sync.WaitGroup
	outcomes := make([]Outcome, 3)
	for i := range 3 {
		wg.Go(func() {
			var err error
			// Generator 2 has no config of its own: it runs the manager's,
			// with the password from users.password_env.
			var own *workload.Config
			if i < 2 {
				own = cfg
			}
			outcomes[i], err = Serve(ctx, ctx, GeneratorOptions{Manager: srv.URL, Token: testToken, Version: "v-test",
				Host: fmt.Sprintf("gen-%d", i), Index: -1, Base: own, RunShard: shardRunner, BeatEvery: 500 * time.Millisecond, Log: testLog{t}})
			if err != nil {
				t.Errorf("generator %d: %v", i, err)
			}
		})
	}
	merged, err := m.Run(ctx, ctx, cfg)
	m.Finish("done", 10*time.Second)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outcomes {
		if o.Steps != 1 || o.Verdict != "done" || o.Partial {
			t.Errorf("generator %d: %+v, want 1 step and the manager's verdict", i, o)
		}
	}
	if merged.Delivery.PendingRemote != 0 || merged.Delivery.Lost != 0 || merged.Delivery.RelayedRemote == 0 {
		t.Errorf("merged: %d pending, %d lost, %d relayed", merged.Delivery.PendingRemote, merged.Delivery.Lost, merged.Delivery.RelayedRemote)
	}
	if merged.Sink.Messages == 0 || merged.Target.Sink != cfg.Sink.Listen {
		t.Errorf("merged sink: %+v at %q, want the manager's sink at %s", merged.Sink, merged.Target.Sink, cfg.Sink.Listen)
	}
	a, _ := json.MarshalIndent(countsOf(t, one), "", " ")
	b, _ := json.MarshalIndent(countsOf(t, merged), "", " ")
	if string(a) != string(b) {
		t.Errorf("3 managed shards differ from the single run:\nmerged %s\nsingle %s", b, a)
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", p)
	return len(p), nil
}

// TestGeneratorRefusesAClockOffset: a generator whose clock is further from
// the manager's than the manager allows (here the manager's answer says 3 s
// ahead) tells the manager, which fails the run naming it, and exits with
// the reason.
func TestGeneratorRefusesAClockOffset(t *testing.T) {
	m, err := New(Options{Generators: 1, Token: testToken, Version: "v-test", ConfigHash: "cafe"})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler()
	skewed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != RegisterPath {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var wl Welcome
		if err := json.Unmarshal(rec.Body.Bytes(), &wl); err != nil {
			t.Error(err)
		}
		wl.ManagerTime = wl.ManagerTime.Add(3 * time.Second)
		_ = json.NewEncoder(w).Encode(wl)
	})
	srv := httptest.NewServer(skewed)
	defer srv.Close()
	ctx := context.Background()
	_, err = Serve(ctx, ctx, GeneratorOptions{Manager: srv.URL, Token: testToken, Version: "v-test", Index: -1,
		RunShard: func(context.Context, context.Context, *workload.Config, schedule.Shard, time.Time) (*report.Run, error) {
			t.Error("a generator with a clock 3 s off ran a shard")
			return nil, nil
		}})
	if err == nil || !strings.Contains(err.Error(), "from the manager's") || !strings.Contains(err.Error(), "more than the 500ms allowed") {
		t.Fatalf("Serve = %v", err)
	}
	// The offset is estimated from a round trip (3 s less half of it): on a
	// busy machine "2.999s", so the figure is read, not matched.
	err = m.WaitRegistered(ctx)
	var offset time.Duration
	if err != nil {
		if match := regexp.MustCompile(`shard 0/1: its clock is (\S+) from`).FindStringSubmatch(err.Error()); match != nil {
			offset, _ = time.ParseDuration(match[1])
		}
	}
	if offset < 2500*time.Millisecond || offset > 3500*time.Millisecond {
		t.Errorf("WaitRegistered = %v, want the generator's clock named, about 3s off", err)
	}
}

// TestGeneratorRefusedByTheManager: a refusal (another version) ends the
// generator at once with the manager's reason; it does not retry.
func TestGeneratorRefusedByTheManager(t *testing.T) {
	m, err := New(Options{Generators: 1, Token: testToken, Version: "v-new"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	ctx := context.Background()
	start := time.Now()
	_, err = Serve(ctx, ctx, GeneratorOptions{Manager: srv.URL, Token: testToken, Version: "v-old", Index: -1})
	var refused *Refused
	if !errors.As(err, &refused) || refused.Status != http.StatusConflict || !strings.Contains(err.Error(), `version "v-old": the manager runs "v-new"`) {
		t.Fatalf("Serve = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("a refusal took %v: it was retried", time.Since(start))
	}
	_, err = Serve(ctx, ctx, GeneratorOptions{Manager: srv.URL, Token: "not-the-token-at-all", Version: "v-new", Index: -1})
	if !errors.As(err, &refused) || refused.Status != http.StatusUnauthorized {
		t.Errorf("a wrong token: %v", err)
	}
}

// TestManagerStopIsPassedOn: stopping the manager mid-run (its first
// Ctrl-C) asks every generator, at its next heartbeat, to end its
// arrivals; their partial reports merge into one partial report.
func TestManagerStopIsPassedOn(t *testing.T) {
	if testing.Short() {
		t.Skip("a managed run of a few seconds")
	}
	base := testconfig.Quick(t, 20*time.Second)
	cfg := againstDemoTarget(t, base)
	hash, err := ConfigDigest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Generators: 2, Token: testToken, Version: "v-test", ConfigHash: hash,
		StartDelay: time.Second, StartSink: StartSink})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			out, err := Serve(ctx, ctx, GeneratorOptions{Manager: srv.URL, Token: testToken, Version: "v-test", Index: i,
				Base: cfg, RunShard: shardRunner, BeatEvery: 300 * time.Millisecond})
			if err != nil || out.Steps != 1 {
				t.Errorf("generator %d: %+v, %v", i, out, err)
			}
		})
	}
	stop, cancel := context.WithCancel(ctx)
	time.AfterFunc(4*time.Second, cancel)
	start := time.Now()
	merged, err := m.Run(stop, ctx, cfg)
	m.Finish("stopped", 10*time.Second)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !merged.Partial || merged.SessionsStarted == 0 {
		t.Errorf("merged: partial %v (%q), %d sessions: want a partial report of what ran", merged.Partial, merged.PartialReason, merged.SessionsStarted)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the stopped run took %v; its window was 20 s", took)
	}
}

// TestManagedRunNamesAMisroutedRelay: when the server relays the remote
// domain elsewhere than the manager's sink, the merged report counts those
// deliveries missing and says where to look.
func TestManagedRunNamesAMisroutedRelay(t *testing.T) {
	if testing.Short() {
		t.Skip("a managed run of a few seconds")
	}
	cfg := againstDemoTarget(t, testconfig.Quick(t, 2*time.Second)) // relays to cfg's sink.listen...
	cfg.Sink.Listen = testutil.FreeAddr(t)                          // ...which the manager's sink is not
	hash, err := ConfigDigest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Generators: 1, Token: testToken, Version: "v-test", ConfigHash: hash, StartDelay: time.Second, StartSink: StartSink})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := Serve(ctx, ctx, GeneratorOptions{Manager: srv.URL, Token: testToken, Version: "v-test", Index: -1, Base: cfg, RunShard: shardRunner}); err != nil {
			t.Error(err)
		}
	}()
	merged, err := m.Run(ctx, ctx, cfg)
	m.Finish("done", 5*time.Second)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	d := merged.Delivery
	if d.RemoteDeliveries == 0 || d.RelayedRemote != 0 || d.LostRemote != d.RemoteDeliveries {
		t.Fatalf("delivery %+v: want every remote delivery missing", *d)
	}
	want := fmt.Sprintf("the manager's sink at %s received 0: check the server's relay of users.remote_domain", cfg.Sink.Listen)
	if !slices.ContainsFunc(merged.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q lack %q", merged.Warnings, want)
	}
}

// TestGeneratorKeepsItsReportWhenTheManagerDies: a generator whose manager
// is gone when the shard ends writes the shard's report to a file that the
// error names, instead of discarding it.
func TestGeneratorKeepsItsReportWhenTheManagerDies(t *testing.T) {
	cfg := testconfig.Quick(t, time.Second)
	hash, err := ConfigDigest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Generators: 1, Token: testToken, Version: "v-test", ConfigHash: hash, StartDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	ctx := context.Background()
	go m.Run(ctx, ctx, cfg)
	dir := t.TempDir()
	_, err = Serve(ctx, ctx, GeneratorOptions{Manager: srv.URL, Token: testToken, Version: "v-test", Index: 0, Base: cfg,
		ManagerLost: 300 * time.Millisecond, KeepDir: dir,
		RunShard: func(_, _ context.Context, _ *workload.Config, sh schedule.Shard, _ time.Time) (*report.Run, error) {
			srv.CloseClientConnections()
			srv.Close() // the manager dies while the shard runs
			return &report.Run{Name: "kept", Shard: &report.ShardInfo{Index: sh.Index, Count: sh.Count}}, nil
		}})
	if err == nil || !strings.Contains(err.Error(), "the shard's report is kept in "+dir) {
		t.Fatalf("Serve = %v, want the report kept in %s", err, dir)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "mailbench-shard-0-of-1-step-*.json"))
	if len(files) != 1 {
		t.Fatalf("kept files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r, err := report.ReadJSON(f); err != nil || r.Name != "kept" {
		t.Errorf("the kept report reads %v, %v", r, err)
	}
}
