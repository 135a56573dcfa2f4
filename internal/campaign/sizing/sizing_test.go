package sizing

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/resume"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func baseConfig() *workload.Config {
	cfg := workload.DefaultConfig()
	cfg.Name, cfg.File = "fake", "fake.toml"
	cfg.Target.Embedded = true
	cfg.Load.SessionsPerHour = 1000
	return cfg
}

// synthetic is a server whose p95 grows linearly with the rate: at rate r
// its 1000 operations per function take limit × (r/capacity) × k/950 for k =
// 1..1000, so the p95 is about limit × r/capacity and a run passes (strictly
// more than 95% within the limit: operation 951 too) exactly when r ≤
// capacity × 950/951 (limit returns that rate). Every run moves
// the fake clock by the config's planned run length.
type synthetic struct {
	capacity float64
	now      time.Time
	rates    []float64
	seeds    []int64
	late     func(rate float64) int64 // late sessions; nil: none
	noise    func(call int) bool      // true: this call fails whatever its rate
	// drift, when it returns true, gives the run a timeline whose IMAP
	// Connect p95 triples across the window (within the limit).
	drift func(rate float64, measurement time.Duration) bool
	// byConnected: the p95 grows with clients.connected instead of the
	// rate (a server bounded by its connections).
	byConnected bool
	connected   []int
	// byPopulation: the p95 grows with the users of [population]'s mix.
	byPopulation bool
	population   []int
	// inboundDropped, when set, is the inbound mail the run drops at its
	// cap (of 1,000 due), given the run's load.max_concurrent_sessions.
	inboundDropped func(maxConcurrent int) int64
	// slowed: the sessions lasted 3 times their planned length.
	slowed bool
	caps   []int
}

// driftTimeline is two 10 s points of 100 IMAP Connect operations each, at
// 300 ms and then 900 ms: not steady against a 1 s limit.
func driftTimeline() []metrics.Point {
	var ps []metrics.Point
	for i, d := range []time.Duration{300 * time.Millisecond, 900 * time.Millisecond} {
		h := metrics.NewHistogram()
		for range 100 {
			metrics.RecordDuration(h, d)
		}
		enc, err := metrics.EncodeHistogram(h)
		if err != nil {
			panic(err)
		}
		ps = append(ps, metrics.Point{Start: t0.Add(time.Duration(i) * 10 * time.Second), Length: 10 * time.Second,
			Functions: []metrics.FunctionPoint{{Function: measure.IMAPConnect, Totals: metrics.Totals{Operations: 100}, Histogram: enc}}})
	}
	return ps
}

func (s *synthetic) clock() time.Time { return s.now }

// limit is the highest passing rate.
func (s *synthetic) limit() float64 { return s.capacity * 950 / 951 }

// wilsonMargin is how far below limit a rate can be that the search cannot
// show compliant with 95% confidence from 4,000 operations (a step
// lengthened twice): the undecided band.
const wilsonMargin = 0.02

func (s *synthetic) run(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
	call := len(s.rates)
	rate := cfg.Load.SessionsPerHour
	s.rates = append(s.rates, rate)
	s.connected = append(s.connected, cfg.Clients.Connected)
	load := rate
	if s.byConnected {
		load = float64(cfg.Clients.Connected)
	}
	s.population = append(s.population, cfg.PopulationUsers())
	if s.byPopulation {
		load = float64(cfg.PopulationUsers())
		rate = cfg.TargetRate()
	}
	s.seeds = append(s.seeds, cfg.ScheduleSeed)
	s.now = s.now.Add(plannedRun(cfg))
	const limit = time.Second
	rules := compliance.Rules{MaxErrorPercent: 1}
	stats := map[measure.Function]*metrics.FunctionStats{}
	for _, fn := range []measure.Function{measure.IMAPConnect, measure.IMAPSelectInbox, measure.SMTPData} {
		rules.Functions = append(rules.Functions, compliance.Rule{Function: fn, Limit: limit, RequiredPercent: 95})
		fs := metrics.NewFunctionStats(fn, limit)
		// 1000 operations per 10 minutes of measurement: a lengthened
		// step has more.
		n := int(1000 * cfg.Phases.Measurement.Duration / (10 * time.Minute))
		for k := 1; k <= n; k++ {
			d := time.Duration(float64(limit) * load / s.capacity * float64(k) / (0.95 * float64(n)))
			if s.noise != nil && s.noise(call) {
				d = 2 * limit
			}
			fs.Record(d, measure.OK)
		}
		stats[fn] = fs
	}
	run := &report.Run{
		SessionCounts: report.SessionCounts{Users: cfg.Users.Count, TargetSessionsPerHour: rate, AchievedSessionsPerHour: rate, SessionsPerUserHour: 4.8, EquivalentUsers: rate / 4.8, SessionsStarted: 1000},
		Tool:          "mailbench", Version: "test", Name: cfg.Name, Config: cfg.File, Seed: cfg.Seed,
		Started: t0, Ended: t0.Add(time.Minute), Measurement: report.Duration(time.Minute),

		Functions: stats,
	}
	// The server's CPU rises with the load: what the knee lines report.
	run.Server = &metrics.ServerReport{Cores: 2, Figures: []metrics.ServerFigure{
		{Name: "host.cpu_percent", Unit: "%", Mean: 90 * load / s.capacity, Peak: 95 * load / s.capacity, Samples: 10},
		{Name: "dovecot.cpu_cores", Unit: "cores", Mean: 1.5 * load / s.capacity, Peak: 1.6 * load / s.capacity, Samples: 10},
		{Name: "dovecot.rss_bytes", Unit: "bytes", Mean: 1 << 20, Peak: 1 << 20, Samples: 10},
	}}
	if s.late != nil {
		run.SessionsLate = s.late(rate)
	}
	if s.drift != nil && s.drift(rate, cfg.Phases.Measurement.Duration) {
		run.Timeline = driftTimeline()
	}
	s.caps = append(s.caps, cfg.Load.MaxConcurrent)
	if s.inboundDropped != nil {
		d := s.inboundDropped(cfg.Load.MaxConcurrent)
		run.Inbound = report.InboundSummary{Scheduled: 1000, Started: 1000 - d, Dropped: d, DroppedAtCap: d, MaxConcurrent: cfg.StreamMaxConcurrent()}
		run.MaxDroppedPercent = cfg.Compliance.MaxDroppedPercent
	}
	if s.slowed {
		run.PlannedSessionDuration, run.MeanSessionDuration = report.Duration(time.Second), report.Duration(3*time.Second)
	}
	run.Evaluate(rules)
	return run, nil
}

func TestSearchFindsCapacityWithinPrecision(t *testing.T) {
	for _, tc := range []struct {
		name              string
		capacity, start   float64
		precision         float64
		wantGrow, wantShr bool
	}{
		{"grow from below", 7300, 1000, 5, true, false},
		{"shrink from above", 730, 12000, 5, false, true},
		{"fine precision", 12345, 1000, 1, true, false},
		{"coarse precision", 50000, 1000, 20, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &synthetic{capacity: tc.capacity, now: t0}
			cfg := baseConfig()
			res, err := Search(context.Background(), context.Background(), cfg,
				Options{Run: s.run, Start: tc.start, Precision: tc.precision, Now: s.clock})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Found() || res.Stopped != "" {
				t.Fatalf("not found: %s (stopped %q)", res.CapacityLine(), res.Stopped)
			}
			// The capacity is the bracket's low end: it passed, the high
			// end failed or stayed undecided (within the Wilson margin).
			if !(res.Low <= s.limit() && s.limit()*(1-wilsonMargin) < res.High) {
				t.Errorf("bracket [%v, %v) does not hold the limit %v", res.Low, res.High, s.limit())
			}
			if res.High-res.Low > res.Low*tc.precision/100 {
				t.Errorf("bracket [%v, %v) wider than %v%%", res.Low, res.High, tc.precision)
			}
			if got := (s.limit() - res.Low) / s.limit() * 100; got > tc.precision+100*wilsonMargin {
				t.Errorf("found %v, %v%% below the capacity %v", res.Low, got, tc.capacity)
			}
			var grew, shrank, confirms int
			seen := map[int64]bool{}
			for i, p := range res.Probes {
				if seen[p.Seed] || p.Seed != s.seeds[i] || p.Seed == 0 {
					t.Errorf("run %d: seed %d repeated, zero or not the one run", i+1, p.Seed)
				}
				seen[p.Seed] = true
				switch p.Purpose {
				case Grow:
					grew++
				case Shrink:
					shrank++
				case Confirm:
					confirms++
					if p.Rate != res.Low || !p.Pass && p.Outcome != Superseded {
						t.Errorf("confirmation run %d at %v (pass %v), want %v", i+1, p.Rate, p.Pass, res.Low)
					}
				}
			}
			if (grew > 0) != tc.wantGrow || (shrank > 0) != tc.wantShr || confirms != DefaultConfirm {
				t.Errorf("%d grow, %d shrink, %d confirmation runs", grew, shrank, confirms)
			}
			b := res.Probes[res.Bounding]
			if b.Pass || b.Rate != res.High || !(b.Outcome == Fail && strings.Contains(b.Reason, "failing: ") ||
				b.Outcome == Undecided && strings.Contains(b.Reason, "too few operations to decide")) {
				t.Errorf("bounding run %+v", b)
			}
			// Binary search: about log2(range/precision) runs, not a scan,
			// plus up to two lengthenings of the steps in the undecided band.
			if len(res.Probes) > 30 {
				t.Errorf("%d runs", len(res.Probes))
			}
			t.Logf("%s; %d runs; %s", res.CapacityLine(), len(res.Probes), res.BoundingLine())
		})
	}
}

func TestSearchCurveAndRender(t *testing.T) {
	s := &synthetic{capacity: 5000, now: t0}
	res, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: s.run, Start: 1000, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	curve := res.Curve()
	if len(curve) != len(res.Probes) {
		t.Fatalf("%d curve points for %d runs", len(curve), len(res.Probes))
	}
	for i := 1; i < len(curve); i++ {
		if curve[i].Rate < curve[i-1].Rate {
			t.Fatal("curve not sorted by rate")
		}
		a, b := curve[i-1].P95["IMAP Connect"], curve[i].P95["IMAP Connect"]
		if b < a {
			t.Errorf("p95 falls with load: %v at %v, %v at %v", a, curve[i-1].Rate, b, curve[i].Rate)
		}
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Capacity: ", "confirmed", "Bounded by ", "IMAP Connect", "SMTP Data", "p95 (ms) and % compliant per function against load",
		"Bounding row (the server's): ", "users", "target's 95% band",
		"Observed at the knee, beside the bounding run (not a proven cause): at ", "host CPU ", "of 2 cores", "dovecot ", "the highest that passed: ",
		"server dovecot.cpu_cores", "server host.cpu_percent"} {
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
	if back.Low != res.Low || back.High != res.High || len(back.Probes) != len(res.Probes) || !back.Found() || back.Bounding != res.Bounding {
		t.Errorf("read back: %+v", back)
	}
	if !strings.Contains(js.String(), `"knee_server": [`) || !strings.Contains(js.String(), `"dovecot.cpu_cores":`) {
		t.Error("the JSON lacks the knee's server line or the steps' server figures")
	}
	if strings.Contains(text.String(), "server dovecot.rss_bytes") {
		t.Error("the curve shows a figure that is not a knee figure")
	}
	var text2 bytes.Buffer
	back.Elapsed = res.Elapsed
	if err := back.WriteText(&text2); err != nil {
		t.Fatal(err)
	}
	if text2.String() != text.String() {
		t.Errorf("text from the JSON differs:\n%s\nwant:\n%s", text2.String(), text.String())
	}
	t.Logf("\n%s", text.String())
}

func TestSearchBudget(t *testing.T) {
	s := &synthetic{capacity: 9000, now: t0}
	cfg := baseConfig() // 1m + 10m + 2m + 30s = 13m30s a run
	res, err := Search(context.Background(), context.Background(), cfg,
		Options{Run: s.run, Start: 1000, Budget: 50 * time.Minute, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Probes) != 3 || !strings.Contains(res.Stopped, "budget") || res.Found() {
		t.Errorf("%d runs, stopped %q, found %v", len(res.Probes), res.Stopped, res.Found())
	}
	if res.Low != 4000 || !math.IsInf(res.High, 1) || !strings.Contains(res.CapacityLine(), "at least 4,000") {
		t.Errorf("bracket [%v, %v): %s", res.Low, res.High, res.CapacityLine())
	}
}

func TestSearchFailedConfirmationBisectsBelow(t *testing.T) {
	// The first confirmation fails (noise): the found rate bounds the
	// search, which goes on below it and confirms a lower rate.
	var confirmCall = -1
	s := &synthetic{capacity: 8000, now: t0}
	s.noise = func(call int) bool { return call == confirmCall }
	var res *Result
	var err error
	// Find where the first confirmation is, then run again failing it.
	res, _ = Search(context.Background(), context.Background(), baseConfig(), Options{Run: s.run, Start: 1000, Now: s.clock})
	for i, p := range res.Probes {
		if p.Purpose == Confirm {
			confirmCall = i
			break
		}
	}
	first := res.Low
	s2 := &synthetic{capacity: 8000, now: t0, noise: s.noise}
	res, err = Search(context.Background(), context.Background(), baseConfig(), Options{Run: s2.run, Start: 1000, Now: s2.clock})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found() || res.Low >= first || res.High != first {
		t.Errorf("after a failed confirmation at %v: %s", first, res.CapacityLine())
	}
	if p := res.Probes[confirmCall]; p.Pass || p.Purpose != Confirm {
		t.Errorf("confirmation run %+v", p)
	}
}

func TestSearchGeneratorBound(t *testing.T) {
	s := &synthetic{capacity: 1e9, now: t0}
	s.late = func(rate float64) int64 {
		if rate > 6000 {
			return 50 // 5% of 1000
		}
		return 0
	}
	res, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: s.run, Start: 1000, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	// A generator-bound step is no evidence about the server: the search
	// ends bounded by mailbench, with no capacity, at the first such step.
	b := res.Probes[res.Bounding]
	if !b.GeneratorBound || !strings.Contains(b.Reason, "GENERATOR-BOUND") || b.Rate <= 6000 || b.Outcome != MailbenchBound ||
		res.Found() || res.MailbenchBound == "" || !strings.Contains(res.CapacityLine(), "bounded by mailbench, not by the server") ||
		!strings.Contains(res.CapacityLine(), "at least 4,000") {
		t.Errorf("bounding run %+v; %s", b, res.CapacityLine())
	}
}

func TestSearchNothingCompliant(t *testing.T) {
	s := &synthetic{capacity: 0.5, now: t0}
	res, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: s.run, Start: 100, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	if res.Found() || res.Low != 0 || !strings.Contains(res.Stopped, "no compliant rate") || !strings.Contains(res.CapacityLine(), "none found") {
		t.Errorf("stopped %q: %s", res.Stopped, res.CapacityLine())
	}
}

func TestSearchRunError(t *testing.T) {
	calls := 0
	run := func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		calls++
		return nil, errors.New("dial tcp: connection refused")
	}
	res, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || !strings.Contains(res.Stopped, "connection refused") || res.Found() {
		t.Errorf("%d calls, stopped %q", calls, res.Stopped)
	}
}

func TestCheckOptions(t *testing.T) {
	for _, o := range []Options{{Precision: -1}, {Precision: 101}, {Budget: -time.Second}, {Start: math.NaN()}, {MaxRuns: -2}} {
		if _, err := CheckOptions(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	o, err := CheckOptions(Options{Confirm: -1})
	if err != nil || o.Confirm != 0 || o.Precision != DefaultPrecision || o.MaxRuns != DefaultMaxRuns {
		t.Errorf("%+v %v", o, err)
	}
}

func TestSearchResolutionLimit(t *testing.T) {
	// A precision finer than the rates' rounding ends at the resolution
	// instead of looping.
	s := &synthetic{capacity: 123457, now: t0}
	res, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: s.run, Start: 1000, Precision: 0.001, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found() || len(res.Probes) > DefaultMaxRuns || !(res.Low <= s.limit() && s.limit()*(1-wilsonMargin) < res.High) {
		t.Errorf("%d runs: %s", len(res.Probes), res.CapacityLine())
	}
}

// TestPlanSearch: the dry run lists the climb with ⌈rate ÷ 4.8⌉ users and
// their messages, and ends it where the memory budget would.
func TestPlanSearch(t *testing.T) {
	cfg := baseConfig()
	cfg.Load.SessionsPerHour = 4800 // 1,000 users
	cfg.Mailboxes.InboxMessages, cfg.Mailboxes.FolderMessagesMin, cfg.Mailboxes.FolderMessagesMax = 5, 1, 2
	sp, err := PlanSearch(cfg, Options{MemoryAvailable: 2 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Steps) < 2 || sp.Steps[0].Users != 1000 || sp.Steps[1].Users != 2000 || sp.Steps[1].Rate != 9600 {
		t.Fatalf("steps %+v", sp.Steps)
	}
	last := sp.Steps[len(sp.Steps)-1]
	if last.Fits || !strings.Contains(sp.Ceiling, "memory budget") || last.Memory.Total <= 2<<30 {
		t.Errorf("last step %+v, ceiling %q", last, sp.Ceiling)
	}
	for i := 1; i < len(sp.Steps); i++ {
		if sp.Steps[i].Messages <= sp.Steps[i-1].Messages {
			t.Errorf("messages do not grow with users: %+v", sp.Steps)
		}
	}
	fixed, err := PlanSearch(cfg, Options{FixedUsers: true, FixedUsersWhy: "--users", MemoryAvailable: 1 << 40, MaxRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = fixed.WriteText(&b)
	if len(fixed.Steps) != 3 || fixed.Steps[2].Users != cfg.Users.Count || !strings.Contains(b.String(), "fixed (--users)") {
		t.Errorf("fixed: %+v\n%s", fixed.Steps, b.String())
	}
}

// TestSearchResumes: a search stopped after its fourth run and resumed from
// its state file (internal/campaign/resume) replays the four finished runs without
// running them and ends with the same result as an uninterrupted search.
func TestSearchResumes(t *testing.T) {
	whole := &synthetic{capacity: 7300, now: t0}
	want, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: whole.run, Start: 1000, Now: whole.clock})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.json")
	cfg := baseConfig()
	j, err := resume.Open(path, "size", "test", resume.ConfigHash(cfg))
	if err != nil {
		t.Fatal(err)
	}
	first := &synthetic{capacity: 7300, now: t0}
	stop, cancel := context.WithCancel(context.Background())
	run := j.Wrap(campaign.RunFunc(first.run))
	calls := 0
	interrupted := func(s, k context.Context, c *workload.Config) (*report.Run, error) {
		calls++
		r, err := run(s, k, c)
		if calls == 4 {
			cancel() // Ctrl-C after the fourth run finished
		}
		return r, err
	}
	if _, err := Search(stop, context.Background(), cfg, Options{Run: interrupted, Start: 1000, Now: first.clock}); err != nil {
		t.Fatal(err)
	}
	j2, err := resume.Open(path, "size", "test", resume.ConfigHash(cfg))
	if err != nil {
		t.Fatal(err)
	}
	second := &synthetic{capacity: 7300, now: t0}
	got, err := Search(context.Background(), context.Background(), cfg, Options{Run: campaign.RunFunc(j2.Wrap(campaign.RunFunc(second.run))), Start: 1000, Now: second.clock})
	if err != nil {
		t.Fatal(err)
	}
	if j2.Replayed != 4 || len(second.rates) != len(want.Probes)-4 {
		t.Errorf("resumed: %d replayed, %d run again; want 4 and %d", j2.Replayed, len(second.rates), len(want.Probes)-4)
	}
	if got.Low != want.Low || got.High != want.High || len(got.Probes) != len(want.Probes) || !got.Found() {
		t.Errorf("resumed search [%v, %v) in %d runs, uninterrupted [%v, %v) in %d", got.Low, got.High, len(got.Probes), want.Low, want.High, len(want.Probes))
	}
}

// TestSearchPopulationBound: a real server without the accounts a step
// needs ends the search bounded by mailbench's population, naming no
// (passing) run as the bound; a stop while the population grows is the
// user's stop, not a bound.
func TestSearchPopulationBound(t *testing.T) {
	cfg := baseConfig()
	cfg.Target.Embedded = false
	s := &synthetic{capacity: 1e6, now: t0}
	var calls []int
	prepare := func(ctx context.Context, c *workload.Config, from int) (Prepared, error) {
		calls = append(calls, c.Users.Count)
		if c.Users.Count > 1000 {
			return Prepared{}, errors.New("user user1001: LOGIN refused")
		}
		return Prepared{Users: c.Users.Count - from, Messages: 10}, nil
	}
	res, err := Search(context.Background(), context.Background(), cfg, Options{Run: s.run, Start: 2400, Now: s.clock, Prepare: prepare})
	if err != nil {
		t.Fatal(err)
	}
	if res.MailbenchBound == "" || !strings.Contains(res.MailbenchBound, "population could not grow") || res.Bounding != -1 ||
		res.BoundingLine() != "" || !strings.Contains(res.CapacityLine(), "at least 4,800 sessions/hour") {
		t.Errorf("bound %q, bounding %d (%q): %s", res.MailbenchBound, res.Bounding, res.BoundingLine(), res.CapacityLine())
	}
	if len(calls) != 3 || calls[0] != 500 || calls[1] != 1000 || calls[2] != 2000 || res.PreparedUsers != 1000 {
		t.Errorf("prepared %v (%d users in all)", calls, res.PreparedUsers)
	}

	stop, cancel := context.WithCancel(context.Background())
	stopping := func(ctx context.Context, c *workload.Config, from int) (Prepared, error) {
		cancel()
		return Prepared{}, context.Canceled
	}
	res, err = Search(stop, context.Background(), cfg, Options{Run: s.run, Start: 2400, Now: s.clock, Prepare: stopping})
	if err != nil {
		t.Fatal(err)
	}
	if res.MailbenchBound != "" || !strings.Contains(res.Stopped, "stopped by the user") {
		t.Errorf("a stop while growing: bound %q, stopped %q", res.MailbenchBound, res.Stopped)
	}
}

// TestSearchSteadyState: a step whose p95 rises across its window is not
// passed; it is lengthened, and a server that stays unsteady bounds the
// capacity ("the server, not steady") with the drifting row named.
func TestSearchSteadyState(t *testing.T) {
	t.Run("unsteady above 4000/h bounds the capacity below it", func(t *testing.T) {
		s := &synthetic{capacity: 10000, now: t0, drift: func(rate float64, _ time.Duration) bool { return rate >= 4000 }}
		res, err := Search(context.Background(), context.Background(), baseConfig(),
			Options{Run: s.run, Start: 1000, Precision: 10, Now: s.clock})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Found() || res.Low >= 4000 || res.High > 4000*1.001 || res.Low < 4000/1.1 {
			t.Fatalf("%s: want the bracket just below 4000/h", res.CapacityLine())
		}
		b := res.Probes[res.Bounding]
		if b.Outcome != Undecided || len(b.Unsteady) == 0 || !strings.HasPrefix(b.Unsteady[0], "IMAP Connect: p95 300 ms") {
			t.Fatalf("bounding run %+v", b)
		}
		if !strings.Contains(res.BoundingLine(), "the server, not steady") {
			t.Errorf("bounding line %q", res.BoundingLine())
		}
		if row := res.BoundingRow(); row == nil || row.Function != string(measure.IMAPConnect) {
			t.Errorf("bounding row %+v, want IMAP Connect", row)
		}
		lengthened := 0
		for _, p := range res.Probes {
			if p.Rate == b.Rate && p.Purpose == Lengthen {
				lengthened++
			}
		}
		if lengthened != DefaultMaxLengthen {
			t.Errorf("the unsteady step was lengthened %d times, want %d", lengthened, DefaultMaxLengthen)
		}
		var buf bytes.Buffer
		if err := res.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), `"unsteady": [`) {
			t.Error("the JSON has no unsteady list")
		}
	})
	t.Run("a drift that a longer window settles passes", func(t *testing.T) {
		base := baseConfig()
		short := base.Phases.Measurement.Duration
		s := &synthetic{capacity: 10000, now: t0, drift: func(_ float64, m time.Duration) bool { return m <= short }}
		res, err := Search(context.Background(), context.Background(), base,
			Options{Run: s.run, Start: 1000, Precision: 10, Now: s.clock})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Found() || res.Low < 9000 {
			t.Fatalf("%s: want the synthetic capacity", res.CapacityLine())
		}
		if p := res.Probes[0]; p.Outcome != Superseded || len(p.Unsteady) == 0 {
			t.Errorf("first run %+v: want superseded, unsteady", p)
		}
	})
}

// TestSearchConnectedAxis: with AxisConnected the search varies
// clients.connected at the config's fixed rate, every step on at least as
// many users as clients, and finds the connected capacity of a server
// bounded by its connections; the result renders and reads back on its
// axis.
func TestSearchConnectedAxis(t *testing.T) {
	s := &synthetic{capacity: 3000, now: t0, byConnected: true}
	cfg := baseConfig()
	cfg.Users.Count = 100
	cfg.Load.SessionsPerUserHour = 10 // 1000/h: 100 users
	res, err := Search(context.Background(), context.Background(), cfg,
		Options{Run: s.run, Axis: AxisConnected, Start: 200, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found() || !(res.Low <= s.limit() && s.limit()*(1-wilsonMargin) < res.High) {
		t.Fatalf("%s (stopped %q): want the bracket around %v clients", res.CapacityLine(), res.Stopped, s.limit())
	}
	for i, p := range res.Probes {
		if s.rates[i] != 1000 || p.Rate != 1000 || p.Connected != s.connected[i] || float64(p.Connected) != p.Level {
			t.Errorf("run %d: rate %v, connected %d (level %v): want the rate fixed at 1000/h and the level the clients", i+1, s.rates[i], s.connected[i], p.Level)
		}
		if p.Users < p.Connected {
			t.Errorf("run %d: %d users for %d connected clients", i+1, p.Users, p.Connected)
		}
	}
	line := res.CapacityLine()
	if !strings.Contains(line, "connected clients beside 1,000 sessions/hour") || !strings.Contains(line, ") connected clients: +") {
		t.Errorf("capacity line: %s", line)
	}
	var text, js bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), " clients") || !strings.Contains(text.String(), "connected clients") {
		t.Errorf("text:\n%s", text.String())
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if back.Axis != AxisConnected || back.Low != res.Low || back.Rate != 1000 || back.CapacityLine() != line {
		t.Errorf("read back: axis %q, low %v, rate %v, %q", back.Axis, back.Low, back.Rate, back.CapacityLine())
	}
	if _, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: s.run, Axis: AxisConnected}); err == nil ||
		!strings.Contains(err.Error(), "no clients.connected and --start is not set") {
		t.Errorf("no clients, no start: %v", err)
	}
}

// TestSearchUsersAxis: on the users axis every step runs population.users
// of the mix (its level), at the spec users' session rate and on as many
// users; the capacity is said in users of the mix, names the mix, and
// reads back on its axis. A config with [population] refuses the rate axis.
func TestSearchUsersAxis(t *testing.T) {
	s := &synthetic{capacity: 3000, now: t0, byPopulation: true}
	cfg := baseConfig()
	cfg.Load.SessionsPerHour = 0
	cfg.Users.Count = 100
	cfg.Population = workload.PopulationConfig{Mix: []workload.MixEntry{
		{Users: "spec", Client: "spec", Share: 1}, {Users: "heavy", Client: "desktop", Share: 3}}}
	if _, err := Search(context.Background(), context.Background(), cfg, Options{Run: s.run, Now: s.clock}); err == nil || !strings.Contains(err.Error(), "--axis users") {
		t.Errorf("rate axis on a population: %v", err)
	}
	res, err := Search(context.Background(), context.Background(), cfg, Options{Run: s.run, Axis: AxisUsers, Start: 200, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Found() || !(res.Low <= s.limit() && s.limit()*(1-wilsonMargin) < res.High) {
		t.Fatalf("%s (stopped %q): want the bracket around %v users", res.CapacityLine(), res.Stopped, s.limit())
	}
	for i, p := range res.Probes {
		n := s.population[i]
		if float64(n) != p.Level || p.Users < n || p.Rate != math.Ceil(float64(n)/4)*cfg.Load.SessionsPerUserHour && p.Rate != math.Floor(float64(n)/4)*cfg.Load.SessionsPerUserHour {
			t.Errorf("run %d: population %d, level %v, users %d, rate %v: want the level the users and the spec quarter's sessions", i+1, n, p.Level, p.Users, p.Rate)
		}
	}
	line := res.CapacityLine()
	if !strings.Contains(line, "users of the mix (25% spec/spec, 75% heavy/desktop)") || !strings.Contains(line, ") users: +") {
		t.Errorf("capacity line: %s", line)
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if back.Axis != AxisUsers || back.Mix != res.Mix || back.CapacityLine() != line {
		t.Errorf("read back: axis %q, mix %q, %s", back.Axis, back.Mix, back.CapacityLine())
	}
}

// TestSearchDroppedMail: inbound mail dropped at the stream's cap is load
// the server was not offered. Where the sessions kept their length it is
// mailbench's cap, raised and the step run again; where the server slowed
// the sessions down too, it fails the step.
func TestSearchDroppedMail(t *testing.T) {
	cfg := baseConfig()
	cfg.Load.MaxConcurrent = 100
	s := &synthetic{capacity: 1e6, now: t0, inboundDropped: func(maxConcurrent int) int64 {
		if maxConcurrent <= 100 {
			return 50 // 5% of 1,000
		}
		return 0
	}}
	res, err := Search(context.Background(), context.Background(), cfg, Options{Run: s.run, Start: 1000, Now: s.clock, MaxRuns: 2, MemoryAvailable: 16 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Probes) < 2 {
		t.Fatalf("%d runs, want the step and its rerun with a raised cap", len(res.Probes))
	}
	first, again := res.Probes[0], res.Probes[1]
	if first.Outcome != Superseded || !strings.Contains(first.Reason, "50 inbound messages dropped: 50 at the generator's cap of 25 concurrent deliveries") ||
		!strings.Contains(first.Reason, "mailbench's cap, not the server") {
		t.Errorf("first run: %s: %s", first.Outcome, first.Reason)
	}
	if again.Purpose != RaiseCap || again.Cap <= 100 || !again.Pass || s.caps[1] != again.Cap {
		t.Errorf("second run: %s, cap %d (ran with %d), %s %s", again.Purpose, again.Cap, s.caps[1], again.Outcome, again.Reason)
	}

	s = &synthetic{capacity: 1e6, now: t0, slowed: true, inboundDropped: func(int) int64 { return 50 }}
	res, err = Search(context.Background(), context.Background(), cfg, Options{Run: s.run, Start: 1000, Now: s.clock, MaxRuns: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Probes[0]; p.Outcome != Fail || !strings.HasPrefix(p.Reason, "dropped mail: 50 inbound messages dropped") || !strings.Contains(p.Reason, "the server's: sessions lasted 3.0 s") {
		t.Errorf("slowed sessions: %s: %s", p.Outcome, p.Reason)
	}
}
