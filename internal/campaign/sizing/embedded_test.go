package sizing_test

import (
	"context"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/sizing"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// The embedded target of known capacity: every command waits 5.5 s (above
// the 5 s compliance limit) while more than knee sessions are active
// (demo.Contention as a step: Max = Slope), not at all otherwise.
const (
	knee  = 50
	slope = 5500 * time.Millisecond
	think = 100 * time.Second
)

// kneeConfig is the quick workload reduced to check and read sessions
// (read: exactly 2 bodies), so that every timed function runs in half the
// sessions or more, with a long think time and no inbound mail, IDLE
// watchers or sends. A check session holds its IMAP connection for 2 think
// times, a read session for 4 (before SELECT, UID FETCH and each body): a
// session is active for W = 3 × think on average, and by Little's law a rate
// of λ sessions/s keeps λ·W sessions active on average, Poisson-distributed
// (an M/G/∞ system). The phases are counted in W: warm-up 2.7 W (the
// concurrency reaches its steady state), measurement 20 W (20 independent
// looks at it). The fake clock makes that 1 h 44 min cost no real time;
// what costs real time is the sessions: about 20 × knee per run.
func kneeConfig(t testing.TB) *workload.Config {
	w := 3 * think
	cfg := testconfig.Quick(t, 20*w)
	cfg.Phases.Warmup.Duration = w * 27 / 10
	cfg.Phases.Rampdown.Duration = time.Minute
	cfg.Phases.Settle.Duration = 10 * time.Second
	cfg.Load.ThinkTime.Duration = think
	cfg.Load.OpTimeout.Duration = time.Minute
	cfg.Load.InboundPerSession = 0
	cfg.Load.MaxConcurrent = 1000
	cfg.Delivery.WatchUsers = 0
	cfg.Users.Count = 300
	cfg.Mailboxes.InboxMessages = 10
	cfg.Mailboxes.FolderMessagesMin, cfg.Mailboxes.FolderMessagesMax = 1, 2
	cfg.Sessions.Cleanup.Weight, cfg.Sessions.Folders.Weight, cfg.Sessions.Send.Weight = 0, 0, 0
	cfg.Sessions.Check.Weight, cfg.Sessions.Read.Weight = 50, 50
	cfg.Sessions.Read.BodiesMin, cfg.Sessions.Read.BodiesMax = 2, 2
	return cfg
}

// poissonTail is P(X ≥ k) for X ~ Poisson(m).
func poissonTail(m float64, k int) float64 {
	p, below := math.Exp(-m), 0.0
	for i := range k {
		below += p
		p *= m / float64(i+1)
	}
	return 1 - below
}

// knownCapacity is the rate (sessions/hour) at which 5% of the commands
// arrive above the knee: a command's own session plus Poisson(λW) others
// exceed knee with probability P(Poisson(λW) ≥ knee). Above it the
// response-time rows (95% within 5 s) fail, below it they pass. The model
// ignores the small feedback of the waits themselves (a wait of 5.5 s in
// a session of 300 s): good to about 2%. A run's achieved rate differs from
// its target by the schedule's Poisson noise (about 800 sessions in the
// measurement: ±3.5%, one standard deviation), so a single run's verdict
// is known to about ±8% of it.
func knownCapacity() float64 {
	lo, hi := 0.0, float64(knee)
	for range 60 {
		mid := (lo + hi) / 2
		if poissonTail(mid, knee) < 0.05 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo / (3 * think).Seconds() * 3600
}

// watchdog ends the test binary when fn has not returned within d of real
// time: inside a synctest bubble a wedged run would otherwise only end at
// go test's own timeout.
func watchdog(t *testing.T, d time.Duration) func() {
	timer := time.AfterFunc(d, func() {
		debug.SetTraceback("all")
		panic(t.Name() + ": did not finish within " + d.String() + " of real time")
	})
	return func() { timer.Stop() }
}

// TestSizeFindsKnownCapacity sizes the embedded target of known capacity
// with whole runs inside testing/synctest over memnet (fake clock,
// in-memory network): the search converges within its precision, confirms,
// and its bracket [Low, High) holds the known capacity (to the model's few
// percent); the bounding run failed on response times.
func TestSizeFindsKnownCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("whole runs: about 10 s")
	}
	const precision = 15.0
	want := knownCapacity()
	kneeRate := float64(knee) / (3 * think).Seconds() * 3600 // mean concurrency at the knee: must fail
	defer watchdog(t, 2*time.Minute)()
	start := time.Now()
	synctest.Test(t, func(t *testing.T) {
		cfg := kneeConfig(t)
		cfg.Load.SessionsPerHour = 400
		res, err := sizing.Search(context.Background(), context.Background(), cfg, sizing.Options{
			Run: campaign.Orchestrated(orchestrator.Options{Network: memnet.New(), EmbeddedOptions: func(o *demo.Options) {
				o.Contention = demo.Contention{Knee: knee, Slope: slope, Max: slope}
			}}),
			Precision: precision, Confirm: 1, MaxRuns: 8,
		})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_ = res.WriteText(&b)
		t.Logf("known capacity %.0f sessions/hour (mean concurrency at the knee: %.0f)\n%s", want, kneeRate, b.String())
		if !res.Found() {
			t.Fatalf("not found: %s (%s)", res.CapacityLine(), res.Stopped)
		}
		if res.BracketPercent() > precision {
			t.Errorf("bracket %.1f%% wider than the precision %g%%", res.BracketPercent(), precision)
		}
		// Low passed and High failed: the true limit is in [Low, High),
		// and the model's within 8% of it.
		if res.Low > want*1.08 || res.High < want*0.92 {
			t.Errorf("bracket [%.0f, %.0f) does not hold the known capacity %.0f (±8%%)", res.Low, res.High, want)
		}
		for _, p := range res.Probes {
			if p.Rate >= kneeRate && p.Pass {
				t.Errorf("a run at %.0f sessions/hour, above the knee's %.0f, passed", p.Rate, kneeRate)
			}
		}
		bound := res.Probes[res.Bounding]
		if bound.Pass || bound.Run == nil || bound.Rate != res.High || !strings.Contains(bound.Reason, "failing: ") {
			t.Errorf("bounding run: rate %v pass %v reason %q", bound.Rate, bound.Pass, bound.Reason)
		}
		// The bounding step simulated rate ÷ 4.8 users, and its report
		// carries the users figure.
		wantUsers := int(math.Ceil(bound.Rate / 4.8))
		if u, ok := bound.Run.UsersFigure(); bound.Users != wantUsers || bound.Run.Users != wantUsers || !ok || u != wantUsers {
			t.Errorf("bounding step at %.0f/h ran %d users (report %d, figure %d %v), want %d", bound.Rate, bound.Users, bound.Run.Users, u, ok, wantUsers)
		}
		if res.BoundingRow() == nil || res.BoundingRow().P95 < slope || res.MailbenchBound != "" {
			t.Errorf("bounding row %+v, mailbench bound %q", res.BoundingRow(), res.MailbenchBound)
		}
		curve := res.Curve()
		lo, hi := curve[0], curve[len(curve)-1]
		if hi.P95["IMAP SELECT_INBOX"] < slope || lo.P95["IMAP SELECT_INBOX"] >= slope {
			t.Errorf("p95 of IMAP SELECT_INBOX: %v at %.0f/h, %v at %.0f/h; want below %v, then at least", lo.P95["IMAP SELECT_INBOX"], lo.Rate, hi.P95["IMAP SELECT_INBOX"], hi.Rate, slope)
		}
	})
	t.Logf("%v of real time", time.Since(start).Round(time.Millisecond))
}

// TestSizeBoundedByPopulation: a fixed population of 10 users at a rate
// whose sessions need 33 at once (no contention in the target): every user
// is busy, sessions are dropped, the sessions lasted as planned, so the
// bound is mailbench's population, not the server: no capacity, the bound
// named.
func TestSizeBoundedByPopulation(t *testing.T) {
	if testing.Short() {
		t.Skip("whole runs")
	}
	defer watchdog(t, 2*time.Minute)()
	synctest.Test(t, func(t *testing.T) {
		cfg := kneeConfig(t)
		cfg.Users.Count = 10
		cfg.Load.SessionsPerHour = 400
		res, err := sizing.Search(context.Background(), context.Background(), cfg, sizing.Options{
			Run:        campaign.Orchestrated(orchestrator.Options{Network: memnet.New()}),
			FixedUsers: true, FixedUsersWhy: "--fixed-users", Confirm: -1, MaxRuns: 4,
		})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_ = res.WriteText(&b)
		t.Log(b.String())
		if res.Found() || res.MailbenchBound == "" || len(res.Probes) != 1 {
			t.Fatalf("found %v, %d runs, mailbench bound %q", res.Found(), len(res.Probes), res.MailbenchBound)
		}
		p := res.Probes[0]
		if p.Outcome != sizing.MailbenchBound || p.Run.DropsBy() != report.DropsPopulation || p.Run.SessionsDroppedUsersBusy == 0 ||
			!strings.Contains(res.MailbenchBound, "every one of the 10 users busy") {
			t.Errorf("probe %s, drops by %q (%d users busy): %s", p.Outcome, p.Run.DropsBy(), p.Run.SessionsDroppedUsersBusy, res.MailbenchBound)
		}
		for _, want := range []string{"bounded by mailbench, not by the server", "Bounded by mailbench (not the server)"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("text lacks %q", want)
			}
		}
		if strings.Contains(res.CapacityLine(), "users (simulated") {
			t.Errorf("a users figure from a fixed population: %s", res.CapacityLine())
		}
	})
}

// TestSizeRaisesTheGeneratorCap: the generator's cap of 10 concurrent
// sessions, below the 33 the rate needs, drops sessions that lasted as
// planned: mailbench's own limit. The search runs the step again with the
// cap raised (within the memory budget) and the step passes.
func TestSizeRaisesTheGeneratorCap(t *testing.T) {
	if testing.Short() {
		t.Skip("whole runs")
	}
	defer watchdog(t, 2*time.Minute)()
	synctest.Test(t, func(t *testing.T) {
		cfg := kneeConfig(t)
		cfg.Load.MaxConcurrent = 10
		cfg.Load.SessionsPerHour = 400
		res, err := sizing.Search(context.Background(), context.Background(), cfg, sizing.Options{
			Run:     campaign.Orchestrated(orchestrator.Options{Network: memnet.New()}),
			Confirm: -1, MaxRuns: 2, MemoryAvailable: 16 << 30,
		})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_ = res.WriteText(&b)
		t.Log(b.String())
		if len(res.Probes) != 2 {
			t.Fatalf("%d runs, want 2", len(res.Probes))
		}
		first, again := res.Probes[0], res.Probes[1]
		if first.Outcome != sizing.Superseded || first.Run.DropsBy() != report.DropsGeneratorCap || first.Run.SessionsDroppedAtCap == 0 {
			t.Errorf("first run: %s, drops by %q (%d at the cap)", first.Outcome, first.Run.DropsBy(), first.Run.SessionsDroppedAtCap)
		}
		if again.Purpose != sizing.RaiseCap || again.Cap <= 10 || !again.Pass || again.Run.SessionsDropped != 0 || res.Low != 400 {
			t.Errorf("second run: %s cap %d, %s, %d dropped; low %v", again.Purpose, again.Cap, again.Outcome, again.Run.SessionsDropped, res.Low)
		}
	})
}
