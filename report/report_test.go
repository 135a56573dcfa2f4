package report

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/metrics"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// observe feeds s reproducible observations: for function index i, n
// operations with durations spread over 1..spread ms, of which slow exceed
// the limit and failed end in the given class.
func observe(s *metrics.Stats, f measure.Function, n, slow, failed int, class measure.ErrorClass, spread time.Duration, limit time.Duration) {
	for k := range n {
		o := measure.Observation{Function: f, Start: t0, Duration: time.Duration(k%1000+1) * spread / 1000}
		switch {
		case k < slow:
			o.Duration = limit + time.Duration(k+1)*time.Millisecond
		case k < slow+failed:
			o.Class = class
		}
		s.Observe(o)
	}
}

// compliantRun is a full run where every row passes.
func compliantRun() *Run {
	rules := compliance.DefaultRules()
	s := metrics.NewStats(rules.Limits())
	for i, f := range fixtureFunctions {
		limit := 5 * time.Second
		if f == measure.DeliveryLocal || f == measure.DeliveryRemote {
			limit = time.Minute
		}
		observe(s, f, 500+37*i, i%3, i%2, measure.Timeout, time.Duration(20+i*15)*time.Millisecond, limit)
	}
	h := metrics.NewHistogram()
	for k := range 400 {
		metrics.RecordDuration(h, time.Duration(k+5)*time.Millisecond)
	}
	r := &Run{
		Tool: "mailbench", Version: "0.1.0", Config: "configs/enterprise.toml", Name: "enterprise-2500", Seed: 42,
		Started: t0, Ended: t0.Add(12*time.Minute + 30*time.Second),
		Warmup: Duration(time.Minute), Measurement: Duration(10 * time.Minute), Rampdown: Duration(90 * time.Second),
		Target:        Target{IMAP: "mail.example.test:993", SMTP: "mail.example.test:587", Sink: "10.0.0.5:2525"},
		SessionCounts: SessionCounts{TargetSessionsPerHour: 12000, AchievedSessionsPerHour: 12019.2, SessionsPerUserHour: 4.8, EquivalentUsers: 2500, Users: 2500, MaxConcurrentSessions: 1000, PlannedSessionDuration: Duration(10 * time.Second), PlannedConcurrency: 12000.0 / 3600 * 10, MeanSessionDuration: Duration(11 * time.Second), SessionsScheduled: 2003, SessionsStarted: 2003, SessionsLoggedIn: 1998, SessionsCompleted: 1990, SessionsFailed: 13, SessionsLate: 2, SessionsDropped: 0, SessionsByType: map[string]int64{"check": 701, "read": 501, "cleanup": 200, "folders": 200, "send": 401}, MaxConcurrentObserved: 37},

		Inbound: InboundSummary{TargetPerHour: 6000, Scheduled: 1011, Started: 1011, Late: 1},
		Generator: &GeneratorHealth{LateTolerance: time.Second, SessionLateness: latenessOf(2003, 300*time.Microsecond),
			InboundLateness: latenessOf(1011, 200*time.Microsecond), CPUKnown: true, CPU: 120 * time.Second,
			CPUWindow: 10 * time.Minute, Cores: 2, GCPause: 41 * time.Millisecond, GCCycles: 230},

		Sink: SinkSummary{Messages: 400, Recipients: 480, Bytes: 3355443,
			RelayDelayP50: Duration(time.Duration(h.ValueAtPercentile(50)) * time.Microsecond),
			RelayDelayP95: Duration(time.Duration(h.ValueAtPercentile(95)) * time.Microsecond),
			RelayDelayMax: Duration(time.Duration(h.Max()) * time.Microsecond), RelayDelay: Histogram{h}},
		Functions: s.Snapshot(),
	}
	r.Evaluate(rules)
	return r
}

// failingRun is a partial run on the embedded target with a row at exactly
// 95.00%, a function that never ran, an error rate of exactly 1% and
// warnings; it has no sink.
func failingRun() *Run {
	rules := compliance.DefaultRules()
	rules.Functions = slices.DeleteFunc(rules.Functions, func(r compliance.Rule) bool {
		return r.Function == measure.DeliveryLocal || r.Function == measure.DeliveryRemote
	})
	s := metrics.NewStats(rules.Limits())
	for i, f := range measure.SPECFunctions {
		switch f {
		case measure.IMAPExpunge: // exactly 95.00% within: fails
			observe(s, f, 200, 10, 0, measure.OK, 10*time.Millisecond, 5*time.Second)
		case measure.IMAPLsub: // never ran
		case measure.SMTPData: // the errors: 1% overall in total
			observe(s, f, 1000, 0, 0, measure.OK, 5*time.Millisecond, 5*time.Second)
		default:
			observe(s, f, 100+i, 0, 0, measure.OK, 3*time.Millisecond, 5*time.Second)
		}
	}
	snap := s.Snapshot()
	var ops int64
	for _, fs := range snap {
		ops += fs.Operations
	}
	// Make the error rate exactly 1%: add failures (and their operations) so
	// that errors*100 == ops.
	total := ops
	for (total)%99 != 0 {
		s.Observe(measure.Observation{Function: measure.SMTPData, Duration: time.Millisecond})
		total++
	}
	fails := total / 99
	for range fails {
		s.Observe(measure.Observation{Function: measure.SMTPData, Duration: 2 * time.Second, Class: measure.Connection})
	}
	r := &Run{
		Tool: "mailbench", Version: "0.1.0", Name: "quick", Seed: 7,
		Started: t0, Ended: t0.Add(95 * time.Second),
		Warmup: Duration(10 * time.Second), Measurement: Duration(2 * time.Minute), Rampdown: Duration(10 * time.Second),
		Partial: true, PartialReason: "interrupted by SIGINT",
		Target:        Target{IMAP: "127.0.0.1:41143", SMTP: "127.0.0.1:41025", Embedded: true},
		SessionCounts: SessionCounts{TargetSessionsPerHour: 600, AchievedSessionsPerHour: 587.5, SessionsPerUserHour: 4.8, SessionsScheduled: 48, SessionsStarted: 47, SessionsLoggedIn: 41, SessionsCompleted: 40, SessionsFailed: 7, SessionsLate: 0, SessionsDropped: 1, SessionsDroppedAtCap: 1, MaxConcurrentSessions: 5, Users: 50, MaxConcurrentObserved: 5},

		Warnings:  []string{"TLS certificate verification disabled for IMAP", "measurement window shorter than configured"},
		Functions: s.Snapshot(),
	}
	r.Evaluate(rules)
	return r
}

func TestWriteJSONGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		run  *Run
	}{
		{"compliant.json.golden", compliantRun()},
		{"partial_failing.json.golden", failingRun()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteJSON(&b, tt.run); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// equalRuns compares runs field by field, histograms with Equals.
func equalRuns(t *testing.T, got, want *Run) {
	t.Helper()
	g, w := *got, *want
	// The derived figures are written, and read back as stored; the
	// methods that compute them are tested apart.
	for _, r := range []*Run{&g, &w} {
		c := &r.SessionCounts
		c.Expected, c.ExpectedLow, c.ExpectedHigh, c.UsersFigured, c.PerUser = 0, 0, 0, false, 0
		c.DroppedBy, c.MeanConcurrency, c.AchievedBandLow, c.AchievedBandHigh = NoDrops, 0, 0, 0
	}
	gf, wf := g.Functions, w.Functions
	gh, wh := g.Sink.RelayDelay.Histogram, w.Sink.RelayDelay.Histogram
	g.Functions, w.Functions, g.Sink.RelayDelay, w.Sink.RelayDelay = nil, nil, Histogram{}, Histogram{}
	gg, wg := g.Generator, w.Generator
	g.Generator, w.Generator = nil, nil
	if (gg == nil) != (wg == nil) {
		t.Errorf("generator health: got %v, want %v", gg, wg)
	} else if gg != nil {
		a, b := *gg, *wg
		for _, h := range [][2]*hdrhistogram.Histogram{{a.SessionLateness, b.SessionLateness}, {a.InboundLateness, b.InboundLateness}} {
			if (h[0] == nil) != (h[1] == nil) || (h[0] != nil && !h[0].Equals(h[1])) {
				t.Error("lateness histograms differ")
			}
		}
		a.SessionLateness, b.SessionLateness, a.InboundLateness, b.InboundLateness = nil, nil, nil, nil
		a.Reasons, b.Reasons = nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Errorf("generator health differs:\n got %+v\nwant %+v", a, b)
		}
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("runs differ:\n got %+v\nwant %+v", g, w)
	}
	if (gh == nil) != (wh == nil) || (gh != nil && !gh.Equals(wh)) {
		t.Error("relay delay histograms differ")
	}
	if len(gf) != len(wf) {
		t.Fatalf("%d functions, want %d", len(gf), len(wf))
	}
	for f, w := range wf {
		g := gf[f]
		if g == nil || g.Function != w.Function || g.Limit != w.Limit || g.Operations != w.Operations ||
			g.WithinLimit != w.WithinLimit || fmt.Sprint(g.Errors) != fmt.Sprint(w.Errors) || !g.Histogram.Equals(w.Histogram) {
			t.Errorf("function %q differs:\n got %+v\nwant %+v", f, g, w)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, run := range []*Run{compliantRun(), failingRun(), {}} {
		var b bytes.Buffer
		if err := WriteJSON(&b, run); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(&b)
		if err != nil {
			t.Fatalf("ReadJSON() = %v", err)
		}
		equalRuns(t, back, run)
	}
}

func TestReadJSONRejects(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, failingRun()); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	foreign, _ := hdrhistogram.New(1, 1000, 2).Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	firstHist := good[strings.Index(good, `"histogram": "`)+len(`"histogram": "`):]
	firstHist = firstHist[:strings.Index(firstHist, `"`)]
	// inFunctions replaces old by new in the "functions" section only.
	head, funcs, _ := strings.Cut(good, `"functions": [`)
	inFunctions := func(old, new string) string {
		return head + `"functions": [` + strings.Replace(funcs, old, new, 1)
	}
	dupFunction := funcs[:strings.Index(funcs, "\n    }")+len("\n    }")]
	tests := []struct {
		name, input, wantErr string
	}{
		{"empty", "", "not a JSON document"},
		{"other schema", strings.Replace(good, `"schema_version": 1`, `"schema_version": 2`, 1), "schema_version 2"},
		{"no schema", strings.Replace(good, `"schema_version": 1,`, ``, 1), "schema_version 0"},
		{"unknown field", strings.Replace(good, `"seed": 7`, `"seed": 7, "sede": 1`, 1), "unknown field"},
		{"trailing data", good + "{}", "not a JSON document"},
		{"inconsistent counts", inFunctions(`"within_limit": 190,`, `"within_limit": 201,`), "exceed operations"},
		{"histogram disagrees with operations", inFunctions(`"operations": 200,`, `"operations": 201,`), "histogram holds"},
		{"duplicated function", strings.Replace(good, `"functions": [`, `"functions": [`+dupFunction+",", 1), "appears twice"},
		{"foreign histogram", strings.Replace(good, firstHist, string(foreign), 1), "geometry"},
		{"bad time", strings.Replace(good, `"started": "2026`, `"started": "x2026`, 1), "started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.input == good {
				t.Fatal("test input did not change the report")
			}
			_, err := ReadJSON(strings.NewReader(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ReadJSON() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

// shard splits the observations of one run over n shards, as n load
// generators would measure them, plus the unsplit run.
func shards(n int) (whole *Run, parts []*Run) {
	rules := compliance.DefaultRules()
	all := metrics.NewStats(rules.Limits())
	st := make([]*metrics.Stats, n)
	hs := make([]*hdrhistogram.Histogram, n)
	for i := range st {
		st[i] = metrics.NewStats(rules.Limits())
		hs[i] = metrics.NewHistogram()
	}
	k := 0
	for i, f := range fixtureFunctions {
		for j := range 300 + i*11 {
			o := measure.Observation{Function: f, Duration: time.Duration((j*7919)%6000+1) * time.Millisecond}
			if j%97 == 0 {
				o.Class = measure.ErrorClasses[j%len(measure.ErrorClasses)]
			}
			all.Observe(o)
			st[k%n].Observe(o)
			k++
		}
	}
	whole = &Run{Functions: all.Snapshot()}
	whole.Evaluate(rules)
	for i := range n {
		metrics.RecordDuration(hs[i], time.Duration(i+1)*time.Second)
		parts = append(parts, &Run{
			Tool: "mailbench", Version: "0.1.0", Name: "shards", Seed: 1,
			Started: t0.Add(time.Duration(i) * time.Second), Ended: t0.Add(time.Duration(10-i) * time.Minute),
			Measurement: Duration(5 * time.Minute), SessionCounts: SessionCounts{SessionsPerUserHour: 4.8, TargetSessionsPerHour: 1000, AchievedSessionsPerHour: 1000.1 * float64(i+1), SessionsStarted: int64(10 + i), Users: 209 - i, MeanSessionDuration: Duration(time.Duration(i+1) * time.Second), SessionsDroppedAtCap: int64(i), SessionsDroppedUsersBusy: 1, SessionsByType: map[string]int64{"check": int64(i), fmt.Sprint("t", i): 1}, MaxConcurrentObserved: i + 2},

			// ⌈1000 ÷ 4.8⌉ = 209 users of each shard's share, 625 in all

			Target:    Target{IMAP: fmt.Sprint("imap", i%2)},
			Sink:      SinkSummary{Messages: 1, RelayDelay: Histogram{hs[i]}},
			Warnings:  []string{fmt.Sprint("w", i%2)},
			Functions: st[i].Snapshot(),
		})
		parts[i].Evaluate(rules)
	}
	return whole, parts
}

func TestMergeExact(t *testing.T) {
	whole, parts := shards(3)
	m, err := Merge(parts...)
	if err != nil {
		t.Fatalf("Merge() = %v", err)
	}
	equalRuns(t, &Run{Functions: m.Functions, Table: m.Table}, &Run{Functions: whole.Functions, Table: whole.Table})
	if m.Started != t0 || m.Ended != t0.Add(10*time.Minute) {
		t.Errorf("window = %v..%v", m.Started, m.Ended)
	}
	if m.SessionsStarted != 33 || m.MaxConcurrentObserved != 9 || m.SessionsByType["check"] != 3 || m.SessionsByType["t2"] != 1 {
		t.Errorf("session counts: %+v", m)
	}
	if m.TargetSessionsPerHour != 3000 || m.Users != 624 || m.EquivalentUsers != 624 {
		t.Errorf("rates: target %v achieved %v users %v (%v simulated)", m.TargetSessionsPerHour, m.AchievedSessionsPerHour, m.EquivalentUsers, m.Users)
	}
	// The mean session length is weighted by the shards' sessions: (10×1 + 11×2 + 12×3) / 33 s.
	secs := float64(10*1+11*2+12*3) / 33
	if want := Duration(secs * float64(time.Second)); m.MeanSessionDuration-want > Duration(time.Microsecond) || want-m.MeanSessionDuration > Duration(time.Microsecond) ||
		m.SessionsDroppedAtCap != 3 || m.SessionsDroppedUsersBusy != 3 {
		t.Errorf("mean session %v (want %v), dropped at cap %d, users busy %d", m.MeanSessionDuration, want, m.SessionsDroppedAtCap, m.SessionsDroppedUsersBusy)
	}
	if m.Sink.RelayDelay.TotalCount() != 3 || m.Sink.RelayDelayMax < Duration(3*time.Second) || m.Sink.RelayDelayMax > Duration(3*time.Second+5*time.Millisecond) {
		t.Errorf("sink: %+v", m.Sink)
	}
	if m.Target.IMAP != "imap0, imap1" || m.Name != "shards" {
		t.Errorf("target %q name %q", m.Target.IMAP, m.Name)
	}
	if !slices.Contains(m.Warnings, "merged from 3 runs") || !slices.Contains(m.Warnings, "w0") || !slices.Contains(m.Warnings, "w1") {
		t.Errorf("warnings %q", m.Warnings)
	}
	for _, p := range parts { // inputs are untouched
		if p.Functions[measure.IMAPList].Operations >= whole.Functions[measure.IMAPList].Operations {
			t.Fatal("Merge modified its input")
		}
	}
}

func TestMergeOrderInsensitive(t *testing.T) {
	_, parts := shards(3)
	a, err := Merge(parts[0], parts[1], parts[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]int{{2, 0, 1}} {
		b, err := Merge(parts[order[0]], parts[order[1]], parts[order[2]])
		if err != nil {
			t.Fatal(err)
		}
		equalRuns(t, b, a)
	}
	// Merging merged results and JSON round trips is still exact.
	ab, _ := Merge(parts[0], parts[1])
	var buf bytes.Buffer
	if err := WriteJSON(&buf, ab); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Merge(back, parts[2])
	if err != nil {
		t.Fatal(err)
	}
	equalRuns(t, &Run{Functions: c.Functions, Table: c.Table}, &Run{Functions: a.Functions, Table: a.Table})
}

func TestMergeRejects(t *testing.T) {
	_, parts := shards(2)
	other := *parts[1]
	rules := compliance.DefaultRules()
	rules.Functions[0].Limit = time.Second
	other.Evaluate(rules)
	tests := []struct {
		name string
		runs []*Run
	}{
		{"no runs", nil},
		{"nil run", []*Run{parts[0], nil}},
		{"different rules", []*Run{parts[0], &other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Merge(tt.runs...); err == nil {
				t.Fatal("Merge() = nil error")
			}
		})
	}
	// Same rules, but stats counted against another limit.
	bad := *parts[1]
	bad.Functions = map[measure.Function]*metrics.FunctionStats{measure.SMTPConnect: metrics.NewFunctionStats(measure.SMTPConnect, time.Second)}
	if _, err := Merge(parts[0], &bad); err == nil || !strings.Contains(err.Error(), "limits differ") {
		t.Fatalf("Merge() with a different limit = %v", err)
	}
}

func TestFormatNumbers(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{fmtInt(0), "0"},
		{fmtInt(999), "999"},
		{fmtInt(1000), "1,000"},
		{fmtInt(12019), "12,019"},
		{fmtInt(-1234567), "-1,234,567"},
		{fmtFloat1(12019.24), "12,019.2"},
		{fmtFloat1(-1000.05), "-1,000.0"},
		{fmtMS(1234567 * time.Microsecond), "1,234.57"},
		{fmtMS(812 * time.Microsecond), "0.81"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// TestMergeRefusesNonShards: the same run twice is refused even with
// Force; runs of different configs or windows are refused unless Force,
// naming the runs by their labels; a partial shard makes the merge partial.
func TestMergeRefusesNonShards(t *testing.T) {
	_, parts := shards(2)
	labels := []string{"a.json", "b.json"}
	with := func(change func(r *Run)) []*Run {
		b := *parts[1]
		change(&b)
		return []*Run{parts[0], &b}
	}
	tests := []struct {
		name      string
		runs      []*Run
		want      string // "" merges
		forceable bool
	}{
		{"shards", parts, "", false},
		{"the same run twice", []*Run{parts[0], parts[0]}, `merge: a.json and b.json are the same run ("shards", started 2026-03-01T10:00:00Z, seed 1): merged, its operations would count twice`, false},
		{"the same run, read back to the microsecond", with(func(r *Run) { r.Started = parts[0].Started.Add(300 * time.Nanosecond) }), "are the same run", false},
		{"another config", with(func(r *Run) { r.Config = "other.toml" }), `merge: a.json (config "", name "shards") and b.json (config "other.toml", name "shards") ran different configs: not shards of one run`, true},
		{"another name", with(func(r *Run) { r.Name = "other" }), "ran different configs", true},
		{"another measurement", with(func(r *Run) { r.Measurement = Duration(time.Minute) }), "merge: a.json (warm-up 0s, measurement 5m0s, ramp-down 0s) and b.json (0s, 1m0s, 0s) have different phases: not shards of one run", true},
		{"windows apart", with(func(r *Run) { r.Started = parts[0].Started.Add(31 * time.Second) }), "merge: the measurement windows of a.json and b.json start 31s apart, more than 10% of the measurement (5m0s): not shards of one run", true},
		{"windows just within", with(func(r *Run) { r.Started = parts[0].Started.Add(30 * time.Second) }), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MergeWith(MergeOptions{Labels: labels}, tt.runs...)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("MergeWith() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("MergeWith() = %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrNotShards) != tt.forceable {
				t.Errorf("errors.Is(ErrNotShards) = %v", !tt.forceable)
			}
			m, err := MergeWith(MergeOptions{Labels: labels, Force: true}, tt.runs...)
			if tt.forceable && (err != nil || len(m.Warnings) == 0) {
				t.Errorf("forced: %v, warnings %q", err, m.Warnings)
			}
			if !tt.forceable && err == nil {
				t.Error("forced: the same run twice merged")
			}
		})
	}
	// A partial shard makes the merge partial, and not valid.
	p := *parts[1]
	p.Partial, p.PartialReason = true, "interrupted"
	m, err := Merge(parts[0], &p)
	if err != nil || !m.Partial || m.PartialReason != "interrupted" || m.Valid() {
		t.Errorf("merge with a partial shard: %v, partial %v (%q), valid %v", err, m.Partial, m.PartialReason, m.Valid())
	}
}

// latenessOf is a lateness histogram of n starts, all d late.
func latenessOf(n int64, d time.Duration) *hdrhistogram.Histogram {
	h := metrics.NewHistogram()
	h.RecordValues(int64(d/time.Microsecond), n)
	return h
}

// fixtureFunctions are the functions the test runs time: the SPEC table
// and the two delivery times, as a run without [clients] has them.
var fixtureFunctions = append(append([]measure.Function(nil), measure.SPECFunctions...), measure.DeliveryLocal, measure.DeliveryRemote)
