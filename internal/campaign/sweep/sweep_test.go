package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/metrics"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

func baseConfig() *workload.Config {
	cfg := &workload.Config{Name: "fake", File: "fake.toml"}
	cfg.Load.SessionsPerHour = 12000
	cfg.Load.SessionsPerUserHour = 4.8
	return cfg
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// fakeServer answers like a server whose capacity is capacity sessions/hour:
// every run's achieved rate is its target × (1 - 0.01 × the run's position
// in its level), and a run above capacity has slow operations in IMAP
// APPEND: 1% per 1% of overload, so that it fails beyond capacity × 1.05.
// Every run reports 2 late sessions; an overloaded one (beyond capacity ×
// 1.1) also a duplicated delivery, which fails it.
type fakeServer struct {
	capacity float64
	calls    int
	iters    int                                        // iterations per level, to know the position
	onCall   func(call int, run *report.Run)            // optional hook after each run is built
	fail     func(call int, cfg *workload.Config) error // optional
	seen     []float64                                  // the rates asked for
}

func (f *fakeServer) run(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
	call := f.calls
	f.calls++
	rate := cfg.Load.SessionsPerHour
	f.seen = append(f.seen, rate)
	if f.fail != nil {
		if err := f.fail(call, cfg); err != nil {
			return nil, err
		}
	}
	pos := call % f.iters
	rules := compliance.Rules{MaxErrorPercent: 1}
	stats := map[measure.Function]*metrics.FunctionStats{}
	overload := math.Max(0, (rate/f.capacity-1)*100) + float64(pos) // percent
	for _, fn := range []measure.Function{measure.SMTPConnect, measure.IMAPAppend} {
		rules.Functions = append(rules.Functions, compliance.Rule{Function: fn, Limit: time.Second, RequiredPercent: 95})
		fs := metrics.NewFunctionStats(fn, time.Second)
		stats[fn] = fs
		for i := range 1000 {
			d := 10 * time.Millisecond
			if fn == measure.IMAPAppend && float64(i) < overload*10 {
				d = 2 * time.Second
			}
			cls := measure.OK
			if fn == measure.SMTPConnect && i < pos {
				cls = measure.Timeout
			}
			fs.Record(d, cls)
		}
	}
	achieved := rate * (1 - 0.01*float64(pos))
	run := &report.Run{
		Tool: "mailbench", Version: "test", Name: cfg.Name, Config: cfg.File, Seed: 1,
		Started: t0, Ended: t0.Add(time.Minute), Measurement: report.Duration(time.Minute),
		SessionCounts: report.SessionCounts{TargetSessionsPerHour: rate, AchievedSessionsPerHour: achieved, SessionsPerUserHour: 4.8, Users: int(math.Ceil(rate / 4.8)), EquivalentUsers: math.Ceil(rate / 4.8), SessionsStarted: int64(achieved / 60), SessionsLate: 2},

		Delivery:  &delivery.Reconciliation{},
		Functions: stats,
	}
	if rate > f.capacity*1.1 {
		run.Delivery.Duplicated = 1
	}
	// The server's CPU with the load, a little different each iteration.
	run.Server = &metrics.ServerReport{Cores: 2, Figures: []metrics.ServerFigure{
		{Name: "host.cpu_percent", Unit: "%", Mean: 60*rate/f.capacity + float64(pos), Samples: 6},
		{Name: "postfix.cpu_cores", Unit: "cores", Mean: 0.5 * rate / f.capacity, Samples: 6},
	}}
	run.Evaluate(rules)
	if f.onCall != nil {
		f.onCall(call, run)
	}
	return run, nil
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{7}, 7},
		{"odd count: the middle one", []float64{3, 1, 2}, 2},
		{"even count: mean of the two middle ones", []float64{4, 1, 3, 2}, 2.5},
		{"two", []float64{10, 20}, 15},
		{"duplicates", []float64{5, 5, 1}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if got := Median(in); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Fatalf("Median modified its argument: %v", in)
				}
			}
		})
	}
}

func TestCheckOptions(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		wantLevels []float64
		wantIters  int
		wantErr    string
	}{
		{"defaults", Options{}, []float64{80, 100, 120}, 1, ""},
		{"given", Options{Levels: []float64{50, 100}, Iterations: 3}, []float64{50, 100}, 3, ""},
		{"empty levels", Options{Levels: []float64{}}, nil, 0, "no levels"},
		{"zero level", Options{Levels: []float64{0, 100}}, nil, 0, "positive"},
		{"negative level", Options{Levels: []float64{-10}}, nil, 0, "positive"},
		{"NaN level", Options{Levels: []float64{math.NaN()}}, nil, 0, "positive"},
		{"duplicate level", Options{Levels: []float64{100, 100}}, nil, 0, "twice"},
		{"negative iterations", Options{Iterations: -1}, nil, 0, "iterations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			levels, iters, err := CheckOptions(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || iters != tt.wantIters || !equalFloats(levels, tt.wantLevels) {
				t.Errorf("got %v %d %v, want %v %d", levels, iters, err, tt.wantLevels, tt.wantIters)
			}
		})
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRunLevelsAndIterations(t *testing.T) {
	ctx := context.Background()
	cfg := baseConfig()
	// Capacity 12,000/h: 80% and 100% pass in every iteration; at 120% every
	// iteration is 20%+ overloaded and fails.
	srv := &fakeServer{capacity: 12000, iters: 3}
	res, err := Run(ctx, ctx, cfg, Options{Iterations: 3, Run: srv.run})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Load.SessionsPerHour != 12000 {
		t.Errorf("Run modified the config's rate: %v", cfg.Load.SessionsPerHour)
	}
	wantRates := []float64{9600, 9600, 9600, 12000, 12000, 12000, 14400, 14400, 14400}
	if !equalFloats(srv.seen, wantRates) {
		t.Errorf("rates run %v, want %v", srv.seen, wantRates)
	}
	if len(res.Levels) != 3 || res.Partial || res.BaseRate != 12000 || res.Iterations != 3 {
		t.Fatalf("result %+v", res)
	}
	type want struct {
		verdict         string
		achieved, users float64
		late            int64
		worstFn         string
		dup             int64
	}
	wants := []want{
		// achieved: the median of 1.00, 0.99, 0.98 × target; users: the
		// ⌈target ÷ 4.8⌉ users every run simulated
		{"PASS", 9600 * 0.99, 2000, 6, string(measure.IMAPAppend), 0},
		{"PASS", 12000 * 0.99, 2500, 6, string(measure.IMAPAppend), 0},
		{"FAIL", 14400 * 0.99, 3000, 6, string(measure.IMAPAppend), 3},
	}
	for i, w := range wants {
		l := res.Levels[i]
		if l.Verdict() != w.verdict || math.Abs(l.AchievedPerHour-w.achieved) > 1e-6 || math.Abs(l.EquivalentUsers-w.users) > 1e-6 ||
			l.Late != w.late || l.WorstFunction != w.worstFn || l.Duplicated != w.dup || !l.DeliveryMeasured {
			t.Errorf("level %g%%: %+v, want %+v", l.Percent, l, w)
		}
	}
	// Worst row at 100%: APPEND with 0, 1, 2% slow; the median is 99%.
	if l := res.Levels[1]; math.Abs(l.WorstPercent-99) > 1e-9 {
		t.Errorf("100%%: worst %% %v, want the median 99", l.WorstPercent)
	}
	// The error rate: 0, 1 and 2 timeouts of 2000 operations; median 0.05%.
	if l := res.Levels[0]; math.Abs(l.ErrorPercent-0.05) > 1e-9 {
		t.Errorf("80%%: error rate %v, want 0.05", l.ErrorPercent)
	}
	capLevel, ok := res.Capacity()
	if !ok || capLevel.Percent != 100 {
		t.Errorf("capacity %+v %v, want 100%%", capLevel, ok)
	}
	if ok, why := res.SPECRule(); !ok {
		t.Errorf("SPEC rule failed: %s", why)
	}
	var buf bytes.Buffer
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "three-iterations.txt", buf.Bytes())
	for _, want := range []string{"server host.cpu_percent", "server postfix.cpu_cores", "0.50"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("sweep text lacks %q", want)
		}
	}
	if !strings.Contains(buf.String(), "Capacity: the highest level compliant in every iteration: 100% (11,880 sessions/hour ≡ 2,500 users)") {
		t.Errorf("capacity line:\n%s", buf.String())
	}
}

func TestRunVerdicts(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		capacity   float64
		levels     []float64
		iters      int
		fail       func(call int, cfg *workload.Config) error
		wantIters  []string // per level, the iterations line
		wantCap    float64  // 0: none
		wantSPEC   bool
		wantSPECIn string
	}{
		{"slightly over capacity at 100% still passes", 12000 * 0.98, nil, 3, nil,
			// 100% is 2.04% over: 2.04, 3.04, 4.04% slow (the position adds 1% each).
			[]string{"PASS PASS PASS", "PASS PASS PASS", "FAIL FAIL FAIL"}, 100, true, ""},
		// 100% is 3% over: 3, 4 and 5% slow; 95.00% compliant is not >95%.
		{"the third iteration of 100% fails", 12000 / 1.03, nil, 3, nil,
			[]string{"PASS PASS PASS", "PASS PASS FAIL", "FAIL FAIL FAIL"}, 80, false, "100% level"},
		{"a run that cannot be carried out fails its level", 20000, []float64{80, 100}, 2,
			func(call int, cfg *workload.Config) error {
				if call == 1 {
					return errors.New("connection refused")
				}
				return nil
			},
			[]string{"PASS ERROR", "PASS PASS"}, 100, false, "80% level"},
		{"no 80% level", 20000, []float64{50, 100}, 1, nil, []string{"PASS", "PASS"}, 100, false, "no 80% level"},
		{"nothing passes", 1000, []float64{80, 100}, 1, nil, []string{"FAIL", "FAIL"}, 0, false, "80% level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &fakeServer{capacity: tt.capacity, iters: tt.iters, fail: tt.fail}
			res, err := Run(ctx, ctx, baseConfig(), Options{Levels: tt.levels, Iterations: tt.iters, Run: srv.run})
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range res.Levels {
				var vs []string
				for _, it := range l.Iterations {
					vs = append(vs, string(it.Verdict()))
				}
				if got := strings.Join(vs, " "); got != tt.wantIters[i] {
					t.Errorf("level %g%%: %s, want %s", l.Percent, got, tt.wantIters[i])
				}
			}
			l, ok := res.Capacity()
			if (tt.wantCap == 0) == ok || (ok && l.Percent != tt.wantCap) {
				t.Errorf("capacity %+v %v, want %v", l, ok, tt.wantCap)
			}
			if ok, why := res.SPECRule(); ok != tt.wantSPEC || !strings.Contains(why, tt.wantSPECIn) {
				t.Errorf("SPEC rule %v %q, want %v %q", ok, why, tt.wantSPEC, tt.wantSPECIn)
			}
			var buf bytes.Buffer
			if err := res.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			if tt.wantCap == 0 && !strings.Contains(buf.String(), "Capacity: no level was compliant in every iteration") {
				t.Errorf("no capacity line:\n%s", buf.String())
			}
			if tt.fail != nil && !strings.Contains(buf.String(), "could not be carried out: connection refused") {
				t.Errorf("the failed run is not noted:\n%s", buf.String())
			}
		})
	}
}

func TestRunStopMidSweep(t *testing.T) {
	ctx := context.Background()
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &fakeServer{capacity: 20000, iters: 2}
	// The signal arrives during the 4th run (100%, iteration 2): the runner
	// drains it into a partial report, as orchestrator.Run does.
	srv.onCall = func(call int, run *report.Run) {
		if call == 3 {
			cancel()
			run.Partial, run.PartialReason = true, "interrupted"
		}
	}
	res, err := Run(stop, ctx, baseConfig(), Options{Iterations: 2, Run: srv.run})
	if err != nil {
		t.Fatal(err)
	}
	if srv.calls != 4 {
		t.Errorf("%d runs, want 4: none after the stop", srv.calls)
	}
	if !res.Partial || !strings.Contains(res.PartialReason, "100% iteration 2") {
		t.Errorf("partial %v %q", res.Partial, res.PartialReason)
	}
	got := []string{res.Levels[0].Verdict(), res.Levels[1].Verdict(), res.Levels[2].Verdict()}
	if strings.Join(got, ",") != "PASS,INCOMPLETE,INCOMPLETE" {
		t.Errorf("level verdicts %v", got)
	}
	if v := res.Levels[1].Iterations[1].Verdict(); v != Partial {
		t.Errorf("the stopped run's verdict %s", v)
	}
	if l, ok := res.Capacity(); !ok || l.Percent != 80 {
		t.Errorf("capacity %+v, want 80%%: the levels run in full", l)
	}
	var buf bytes.Buffer
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "stopped.txt", buf.Bytes())

	// Stopped before it starts: nothing runs.
	srv = &fakeServer{capacity: 20000, iters: 1}
	res, err = Run(stop, ctx, baseConfig(), Options{Run: srv.run})
	if err != nil || srv.calls != 0 || !res.Partial || len(res.Levels) != 3 {
		t.Errorf("pre-stopped sweep: err %v, %d runs, %+v", err, srv.calls, res)
	}
}

func TestRunRejects(t *testing.T) {
	ctx := context.Background()
	srv := &fakeServer{capacity: 1, iters: 1}
	noRate := &workload.Config{Name: "x"}
	tests := []struct {
		name string
		cfg  *workload.Config
		opts Options
		want string
	}{
		{"no runner", baseConfig(), Options{}, "no RunFunc"},
		{"no config", nil, Options{Run: srv.run}, "no config"},
		{"no rate", noRate, Options{Run: srv.run}, "no target rate"},
		{"bad level", baseConfig(), Options{Run: srv.run, Levels: []float64{-1}}, "positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run(ctx, ctx, tt.cfg, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	if srv.calls != 0 {
		t.Errorf("%d runs despite bad options", srv.calls)
	}
}

func TestWriteJSON(t *testing.T) {
	ctx := context.Background()
	srv := &fakeServer{capacity: 12000, iters: 2,
		fail: func(call int, cfg *workload.Config) error {
			if call == 5 {
				return errors.New("boom")
			}
			return nil
		}}
	res, err := Run(ctx, ctx, baseConfig(), Options{Iterations: 2, Run: srv.run})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema   string   `json:"schema"`
		Capacity *float64 `json:"capacity_percent"`
		SPECRule struct {
			Pass bool `json:"pass"`
		} `json:"spec_rule"`
		Levels []struct {
			Percent    float64 `json:"percent"`
			Verdict    string  `json:"verdict"`
			Delivery   *struct{ Duplicated int64 }
			Iterations []struct {
				Verdict string          `json:"verdict"`
				Error   string          `json:"error"`
				Report  json.RawMessage `json:"report"`
			} `json:"iterations"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Schema != "mailbench-sweep" || doc.Capacity == nil || *doc.Capacity != 100 || !doc.SPECRule.Pass || len(doc.Levels) != 3 {
		t.Fatalf("schema %q capacity %v SPEC rule %v, %d levels", doc.Schema, doc.Capacity, doc.SPECRule.Pass, len(doc.Levels))
	}
	if l := doc.Levels[2]; l.Verdict != "FAIL" || l.Iterations[1].Verdict != "ERROR" || l.Iterations[1].Error != "boom" || string(l.Iterations[1].Report) != "null" {
		t.Errorf("120%% level: verdict %s, iteration 2: %s %q %.20s", l.Verdict, l.Iterations[1].Verdict, l.Iterations[1].Error, l.Iterations[1].Report)
	}
	// Each embedded report reads back as the run it was.
	for _, l := range doc.Levels {
		for i, it := range l.Iterations {
			if it.Verdict == "ERROR" {
				continue
			}
			run, err := report.ReadJSON(bytes.NewReader(it.Report))
			if err != nil {
				t.Fatalf("level %g%% iteration %d: %v", l.Percent, i+1, err)
			}
			if run.TargetSessionsPerHour != 12000*l.Percent/100 || run.Table.Compliant != (it.Verdict == "PASS") {
				t.Errorf("level %g%% iteration %d: report target %v compliant %v", l.Percent, i+1, run.TargetSessionsPerHour, run.Table.Compliant)
			}
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// TestSweepConnectedAxis: on the connected axis the levels are shares of
// clients.connected at the config's rate; each run gets its level's
// clients, the table shows them and their held median, the JSON says the
// axis; a config without connected clients cannot sweep that axis.
func TestSweepConnectedAxis(t *testing.T) {
	cfg := baseConfig()
	cfg.Clients.Connected = 400
	var got []string
	run := func(stop, kill context.Context, c *workload.Config) (*report.Run, error) {
		got = append(got, fmt.Sprintf("%d@%.0f", c.Clients.Connected, c.Load.SessionsPerHour))
		rules := compliance.Rules{Functions: []compliance.Rule{{Function: measure.IMAPIdle, Limit: time.Second, RequiredPercent: 95}}, MaxErrorPercent: 1}
		fs := metrics.NewFunctionStats(measure.IMAPIdle, time.Second)
		for range 10 {
			fs.Record(time.Millisecond, measure.OK)
		}
		r := &report.Run{Name: c.Name, SessionCounts: report.SessionCounts{TargetSessionsPerHour: c.Load.SessionsPerHour, AchievedSessionsPerHour: c.Load.SessionsPerHour},
			Functions: map[measure.Function]*metrics.FunctionStats{measure.IMAPIdle: fs},
			Clients:   &report.ClientsSummary{Target: c.Clients.Connected, Held: int64(min(c.Clients.Connected, 450))}}
		r.Evaluate(rules)
		return r, nil
	}
	ctx := context.Background()
	res, err := Run(ctx, ctx, cfg, Options{Axis: AxisConnected, Levels: []float64{50, 100, 125}, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if want := "200@12000 400@12000 500@12000"; strings.Join(got, " ") != want {
		t.Errorf("runs %q, want %q", strings.Join(got, " "), want)
	}
	if l := res.Levels[2]; l.Connected != 500 || l.Held != 450 || l.TargetPerHour != 12000 {
		t.Errorf("level 125%%: %+v", l)
	}
	var text, js strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "100% = 400 connected clients at 12,000 sessions/hour") || !strings.Contains(text.String(), "held (median)") ||
		!strings.Contains(text.String(), "100% (400 connected clients held") {
		t.Errorf("text:\n%s", text.String())
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"axis": "connected"`) || !strings.Contains(js.String(), `"connected": 500`) {
		t.Errorf("JSON lacks the axis or the levels' clients")
	}
	cfg.Clients.Connected = 0
	if _, err := Run(ctx, ctx, cfg, Options{Axis: AxisConnected, Run: run}); err == nil {
		t.Error("a connected-axis sweep of a config without connected clients ran")
	}
}

// TestSweepUsersAxis: on the users axis each level runs its percent of the
// mix's users (on at least as many users), at the session rate of its spec
// users; the text names the mix's users per level.
func TestSweepUsersAxis(t *testing.T) {
	cfg := baseConfig()
	cfg.Load.SessionsPerHour = 0
	cfg.Users.Count = 100
	cfg.Population = workload.PopulationConfig{Mix: []workload.MixEntry{
		{Users: "spec", Client: "spec", Share: 1}, {Users: "light", Client: "webmail", Share: 1}}}
	if _, err := Run(context.Background(), context.Background(), cfg, Options{Levels: []float64{100}, Run: nil}); err == nil {
		t.Error("a population swept on the rate axis")
	}
	var got []string
	run := func(stop, kill context.Context, c *workload.Config) (*report.Run, error) {
		got = append(got, fmt.Sprintf("%d/%d@%.0f", c.PopulationUsers(), c.Users.Count, c.TargetRate()))
		r := &report.Run{Name: c.Name, SessionCounts: report.SessionCounts{TargetSessionsPerHour: c.TargetRate(), AchievedSessionsPerHour: c.TargetRate()}}
		r.Evaluate(compliance.Rules{MaxErrorPercent: 1})
		return r, nil
	}
	ctx := context.Background()
	res, err := Run(ctx, ctx, cfg, Options{Axis: AxisUsers, Levels: []float64{50, 200}, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if want := "50/100@120 200/200@480"; strings.Join(got, " ") != want {
		t.Errorf("runs %q, want %q", strings.Join(got, " "), want)
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "100% = 100 users of the mix") || !strings.Contains(text.String(), "users of the mix") {
		t.Errorf("text:\n%s", text.String())
	}
}
