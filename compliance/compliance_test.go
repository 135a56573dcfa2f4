package compliance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/measure"
)

func TestDefaultRules(t *testing.T) {
	r := DefaultRules()
	if err := r.Validate(); err != nil {
		t.Fatalf("DefaultRules().Validate() = %v", err)
	}
	if got, want := len(r.Functions), len(measure.AllFunctions); got != want {
		t.Fatalf("len(Functions) = %d, want %d", got, want)
	}
	for _, f := range measure.SPECFunctions {
		if x, ok := r.Rule(f); !ok || x.Limit != 5*time.Second || x.RequiredPercent != 95 {
			t.Errorf("Rule(%q) = %+v, %v; want 5s/95", f, x, ok)
		}
	}
	for _, f := range []measure.Function{measure.DeliveryLocal, measure.DeliveryRemote} {
		if x, ok := r.Rule(f); !ok || x.Limit != time.Minute || x.RequiredPercent != 95 {
			t.Errorf("Rule(%q) = %+v, %v; want 60s/95", f, x, ok)
		}
	}
	if r.MaxErrorPercent != 1 {
		t.Errorf("MaxErrorPercent = %v, want 1", r.MaxErrorPercent)
	}
}

func TestRulesValidate(t *testing.T) {
	ok := Rule{Function: "x", Limit: time.Second, RequiredPercent: 95}
	tests := []struct {
		name    string
		rules   Rules
		wantErr string // substring; "" means valid
	}{
		{"valid", Rules{Functions: []Rule{ok}, MaxErrorPercent: 1}, ""},
		{"no functions is valid", Rules{MaxErrorPercent: 1}, ""},
		{"empty name", Rules{Functions: []Rule{{Limit: time.Second}}, MaxErrorPercent: 1}, "empty function name"},
		{"duplicate", Rules{Functions: []Rule{ok, ok}, MaxErrorPercent: 1}, "duplicated"},
		{"zero limit", Rules{Functions: []Rule{{Function: "x", RequiredPercent: 95}}, MaxErrorPercent: 1}, "limit"},
		{"limit above histogram range", Rules{Functions: []Rule{{Function: "x", Limit: 2 * time.Hour}}, MaxErrorPercent: 1}, "limit"},
		{"required 100 can never pass", Rules{Functions: []Rule{{Function: "x", Limit: time.Second, RequiredPercent: 100}}, MaxErrorPercent: 1}, "required percent"},
		{"negative required", Rules{Functions: []Rule{{Function: "x", Limit: time.Second, RequiredPercent: -1}}, MaxErrorPercent: 1}, "required percent"},
		{"zero max error can never pass", Rules{Functions: []Rule{ok}}, "max error percent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rules.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFunctionStatsRecord(t *testing.T) {
	const limit = 5 * time.Second
	type op struct {
		d     time.Duration
		class measure.ErrorClass
	}
	tests := []struct {
		name       string
		limit      time.Duration
		ops        []op
		wantWithin int64
		wantErrors map[measure.ErrorClass]int64
	}{
		{"exactly at the limit is within", limit, []op{{limit, measure.OK}}, 1, map[measure.ErrorClass]int64{}},
		{"one ns over the limit is not", limit, []op{{limit + 1, measure.OK}}, 0, map[measure.ErrorClass]int64{}},
		{"a fast failure is not within", limit, []op{{time.Millisecond, measure.Protocol}}, 0, map[measure.ErrorClass]int64{measure.Protocol: 1}},
		{"mixed", limit, []op{
			{time.Millisecond, measure.OK}, {6 * time.Second, measure.OK}, {30 * time.Second, measure.Timeout},
			{time.Second, measure.Connection}, {time.Second, measure.Connection}, {0, measure.OK},
		}, 2, map[measure.ErrorClass]int64{measure.Timeout: 1, measure.Connection: 2}},
		{"no limit counts nothing within", 0, []op{{time.Millisecond, measure.OK}}, 0, map[measure.ErrorClass]int64{}},
		{"out-of-range durations are clamped, not lost", limit, []op{{-time.Second, measure.OK}, {2 * time.Hour, measure.OK}}, 1, map[measure.ErrorClass]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewFunctionStats(measure.IMAPList, tt.limit)
			for _, o := range tt.ops {
				s.Record(o.d, o.class)
			}
			if s.Operations != int64(len(tt.ops)) {
				t.Errorf("Operations = %d, want %d", s.Operations, len(tt.ops))
			}
			if s.WithinLimit != tt.wantWithin {
				t.Errorf("WithinLimit = %d, want %d", s.WithinLimit, tt.wantWithin)
			}
			if fmt.Sprint(s.Errors) != fmt.Sprint(tt.wantErrors) {
				t.Errorf("Errors = %v, want %v", s.Errors, tt.wantErrors)
			}
			if s.Histogram.TotalCount() != s.Operations {
				t.Errorf("Histogram.TotalCount() = %d, want Operations %d (failures are recorded too)", s.Histogram.TotalCount(), s.Operations)
			}
			if err := s.Check(); err != nil {
				t.Errorf("Check() = %v", err)
			}
		})
	}
}

func TestFunctionStatsMergeRejects(t *testing.T) {
	a := NewFunctionStats(measure.IMAPList, time.Second)
	a.Record(time.Millisecond, measure.OK)
	tests := []struct {
		name string
		o    *FunctionStats
	}{
		{"other limit", NewFunctionStats(measure.IMAPList, 2*time.Second)},
		{"other function", NewFunctionStats(measure.IMAPLsub, time.Second)},
		{"other geometry", &FunctionStats{Function: measure.IMAPList, Limit: time.Second, Histogram: hdrhistogram.New(1, 1000, 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.Clone()
			if err := a.Merge(tt.o); err == nil {
				t.Fatal("Merge() = nil, want error")
			}
			if a.Operations != before.Operations || !a.Histogram.Equals(before.Histogram) {
				t.Fatal("a failed Merge changed the receiver")
			}
		})
	}
}

func TestFunctionStatsCheck(t *testing.T) {
	good := func() *FunctionStats {
		s := NewFunctionStats(measure.IMAPList, time.Second)
		s.Record(time.Millisecond, measure.OK)
		s.Record(time.Millisecond, measure.Timeout)
		return s
	}
	tests := []struct {
		name   string
		mutate func(*FunctionStats)
		ok     bool
	}{
		{"consistent", func(*FunctionStats) {}, true},
		{"within above operations", func(s *FunctionStats) { s.WithinLimit = 3 }, false},
		{"within plus errors above operations", func(s *FunctionStats) { s.WithinLimit = 2 }, false},
		{"negative operations", func(s *FunctionStats) { s.Operations = -1 }, false},
		{"negative error count", func(s *FunctionStats) { s.Errors[measure.Other] = -1 }, false},
		{"OK as an error class", func(s *FunctionStats) { s.Errors[measure.OK] = 0 }, false},
		{"histogram count differs", func(s *FunctionStats) { s.Histogram.RecordValue(5) }, false},
		{"no histogram", func(s *FunctionStats) { s.Histogram = nil }, false},
		{"within without a limit", func(s *FunctionStats) { s.Limit = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.mutate(s)
			if err := s.Check(); (err == nil) != tt.ok {
				t.Fatalf("Check() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// statsWith builds stats for one function from exact counts.
func statsWith(f measure.Function, limit time.Duration, within, slow, failed int64) *FunctionStats {
	s := NewFunctionStats(f, limit)
	for range within {
		s.Record(limit/2, measure.OK)
	}
	for range slow {
		s.Record(limit+time.Millisecond, measure.OK)
	}
	for range failed {
		s.Record(time.Millisecond, measure.Protocol)
	}
	return s
}

func TestEvaluate(t *testing.T) {
	const f = measure.IMAPList
	one := Rules{Functions: []Rule{{Function: f, Limit: 5 * time.Second, RequiredPercent: 95}}, MaxErrorPercent: 1}
	tests := []struct {
		name          string
		stats         []*FunctionStats
		rules         Rules
		wantPass      bool
		wantPct       string // FormatCompliant of the row
		wantReason    string
		wantErrorPass bool
		wantFailing   []string
	}{
		{"exactly 95.00% fails >95%", []*FunctionStats{statsWith(f, 5*time.Second, 95, 5, 0)}, one,
			false, "95.00", "95.00% is not >95%", true, []string{string(f)}},
		{"95.01% passes", []*FunctionStats{statsWith(f, 5*time.Second, 9501, 499, 0)}, one,
			true, "95.01", "", true, nil},
		{"all within", []*FunctionStats{statsWith(f, 5*time.Second, 10, 0, 0)}, one,
			true, "100.00", "", true, nil},
		{"never ran fails", nil, one,
			false, "0.00", "no operations", false, []string{string(f), ErrorRateName}},
		{"present but empty fails", []*FunctionStats{NewFunctionStats(f, 5*time.Second)}, one,
			false, "0.00", "no operations", false, []string{string(f), ErrorRateName}},
		{"error rate exactly 1% fails", []*FunctionStats{statsWith(f, 5*time.Second, 99, 0, 1)}, one,
			true, "99.00", "", false, []string{ErrorRateName}},
		{"error rate 0.99% passes", []*FunctionStats{statsWith(f, 5*time.Second, 9901, 0, 99)}, one,
			true, "99.01", "", true, nil},
		{"unruled function's errors count", []*FunctionStats{
			statsWith(f, 5*time.Second, 100, 0, 0), statsWith("custom", 0, 0, 0, 2)}, one,
			true, "100.00", "", false, []string{ErrorRateName}},
		{"limit mismatch fails", []*FunctionStats{statsWith(f, time.Second, 100, 0, 0)}, one,
			false, "0.00", "counted against a 1s limit", true, []string{string(f)}},
		{"custom required percent", []*FunctionStats{statsWith(f, 5*time.Second, 90, 10, 0)},
			Rules{Functions: []Rule{{Function: f, Limit: 5 * time.Second, RequiredPercent: 89.5}}, MaxErrorPercent: 1},
			true, "90.00", "", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := make(map[measure.Function]*FunctionStats)
			for _, s := range tt.stats {
				m[s.Function] = s
			}
			tab := Evaluate(m, tt.rules)
			if len(tab.Rows) != 1 {
				t.Fatalf("len(Rows) = %d, want 1", len(tab.Rows))
			}
			row := tab.Rows[0]
			if row.Pass != tt.wantPass {
				t.Errorf("row.Pass = %v, want %v (%+v)", row.Pass, tt.wantPass, row)
			}
			if got := FormatCompliant(row.WithinLimit, row.Operations); row.PercentCompliant != 0 && got != tt.wantPct {
				t.Errorf("percent = %s, want %s", got, tt.wantPct)
			}
			if !strings.Contains(row.Reason, tt.wantReason) || (tt.wantReason == "") != (row.Reason == "") {
				t.Errorf("row.Reason = %q, want %q", row.Reason, tt.wantReason)
			}
			if tab.Errors.Pass != tt.wantErrorPass {
				t.Errorf("Errors.Pass = %v, want %v (%+v)", tab.Errors.Pass, tt.wantErrorPass, tab.Errors)
			}
			if !slices.Equal(tab.Failing, tt.wantFailing) {
				t.Errorf("Failing = %q, want %q", tab.Failing, tt.wantFailing)
			}
			if tab.Compliant != (len(tt.wantFailing) == 0) {
				t.Errorf("Compliant = %v with Failing %q", tab.Compliant, tab.Failing)
			}
		})
	}
}

func TestEvaluateOrderAndPercentiles(t *testing.T) {
	rules := DefaultRules()
	slices.Reverse(rules.Functions) // order of the rules must not matter
	rules.Functions = append(rules.Functions, Rule{Function: "zz custom", Limit: time.Second, RequiredPercent: 50})
	stats := NewStats(rules)
	for i := range 1000 {
		stats.Observe(measure.Observation{Function: measure.IMAPFetchBody, Duration: time.Duration(i+1) * time.Millisecond})
	}
	tab := stats.Evaluate()
	var got []measure.Function
	for _, r := range tab.Rows {
		got = append(got, r.Function)
	}
	want := append(slices.Clone(measure.AllFunctions), "zz custom")
	if !slices.Equal(got, want) {
		t.Fatalf("row order = %q, want %q", got, want)
	}
	row := tab.Rows[slices.Index(want, measure.IMAPFetchBody)]
	// 1..1000 ms: p50 ≈ 500 ms, p95 ≈ 950, p99 ≈ 990, max ≈ 1000, each within 0.1%.
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{{"p50", row.P50, 500 * time.Millisecond}, {"p95", row.P95, 950 * time.Millisecond}, {"p99", row.P99, 990 * time.Millisecond}, {"max", row.Max, time.Second}} {
		if d := c.got - c.want; d < -c.want/1000 || d > c.want/1000 {
			t.Errorf("%s = %v, want %v ±0.1%%", c.name, c.got, c.want)
		}
	}
	if tab.Compliant || len(tab.Failing) != len(want)-1 {
		t.Errorf("Failing = %q: want every row but %q", tab.Failing, measure.IMAPFetchBody)
	}
	if back := tab.Rules(); len(back.Functions) != len(rules.Functions) || back.MaxErrorPercent != 1 {
		t.Errorf("Table.Rules() = %+v", back)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		num, den  int64
		compliant string // rounded down
		errorRate string // rounded up
	}{
		{0, 0, "0.00", "0.00"},
		{0, 10, "0.00", "0.00"},
		{10, 10, "100.00", "100.00"},
		{996, 1000, "99.60", "99.60"},
		{99999, 100000, "99.99", "100.00"},
		{1, 100000, "0.00", "0.01"},
		{95, 100, "95.00", "95.00"},
		{2, 3, "66.66", "66.67"},
		{1 << 62, 1<<62 + 1, "99.99", "100.00"},
	}
	for _, tt := range tests {
		if got := FormatCompliant(tt.num, tt.den); got != tt.compliant {
			t.Errorf("FormatCompliant(%d, %d) = %s, want %s", tt.num, tt.den, got, tt.compliant)
		}
		if got := FormatErrorRate(tt.num, tt.den); got != tt.errorRate {
			t.Errorf("FormatErrorRate(%d, %d) = %s, want %s", tt.num, tt.den, got, tt.errorRate)
		}
	}
	if got := FormatLimitSeconds(1500 * time.Millisecond); got != "1.5" {
		t.Errorf("FormatLimitSeconds(1.5s) = %s", got)
	}
	if got := FormatPercentLimit(95); got != "95" {
		t.Errorf("FormatPercentLimit(95) = %s", got)
	}
}

// randomObservations returns n reproducible observations over every
// function plus one without a rule.
func randomObservations(seed uint64, n int) []measure.Observation {
	r := rand.New(rand.NewPCG(seed, 1))
	funcs := append(slices.Clone(measure.AllFunctions), "unruled")
	classes := append([]measure.ErrorClass{measure.OK, measure.OK, measure.OK, measure.OK}, measure.ErrorClasses...)
	out := make([]measure.Observation, n)
	for i := range out {
		out[i] = measure.Observation{
			Function: funcs[r.IntN(len(funcs))],
			Duration: time.Duration(r.ExpFloat64() * float64(2*time.Second)),
			Class:    classes[r.IntN(len(classes))],
		}
	}
	return out
}

func equalStats(t *testing.T, got, want map[measure.Function]*FunctionStats) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d functions, want %d", len(got), len(want))
	}
	for f, w := range want {
		g := got[f]
		if g == nil {
			t.Fatalf("function %q missing", f)
		}
		if g.Function != w.Function || g.Limit != w.Limit || g.Operations != w.Operations ||
			g.WithinLimit != w.WithinLimit || fmt.Sprint(g.Errors) != fmt.Sprint(w.Errors) {
			t.Errorf("%q: got %+v, want %+v", f, g, w)
		}
		if !g.Histogram.Equals(w.Histogram) {
			t.Errorf("%q: histograms differ", f)
		}
	}
}

func TestStatsMergeEqualsSingle(t *testing.T) {
	obs := randomObservations(42, 20000)
	all, a, b := NewStats(DefaultRules()), NewStats(DefaultRules()), NewStats(DefaultRules())
	for i, o := range obs {
		all.Observe(o)
		if i%3 == 0 {
			a.Observe(o)
		} else {
			b.Observe(o)
		}
	}
	if err := a.Merge(b); err != nil {
		t.Fatalf("Merge() = %v", err)
	}
	equalStats(t, a.Snapshot(), all.Snapshot())
	if fmt.Sprint(a.Evaluate()) != fmt.Sprint(all.Evaluate()) {
		t.Error("merged evaluation differs from single evaluation")
	}
}

func TestStatsConcurrentObserve(t *testing.T) {
	obs := randomObservations(7, 8000)
	want := NewStats(DefaultRules())
	for _, o := range obs {
		want.Observe(o)
	}
	got := NewStats(DefaultRules())
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(obs); i += workers {
				got.Observe(obs[i])
				if i%1000 == 0 {
					_ = got.Snapshot() // snapshots race with observations safely
				}
			}
		})
	}
	wg.Wait()
	equalStats(t, got.Snapshot(), want.Snapshot())
}

func TestStatsMergeRejectsLimitMismatch(t *testing.T) {
	a := NewStats(DefaultRules())
	a.Observe(measure.Observation{Function: measure.IMAPList, Duration: time.Millisecond})
	other := DefaultRules()
	other.Functions[0].Limit = time.Second
	b := NewStats(other)
	b.Observe(measure.Observation{Function: measure.IMAPList, Duration: time.Millisecond})
	b.Observe(measure.Observation{Function: "extra", Duration: time.Millisecond})
	before := a.Snapshot()
	err := a.Merge(b)
	if err == nil || !strings.Contains(err.Error(), string(other.Functions[0].Function)) {
		t.Fatalf("Merge() = %v, want a limit error naming %q", err, other.Functions[0].Function)
	}
	equalStats(t, a.Snapshot(), before)
}

func TestSnapshotIsDeepCopy(t *testing.T) {
	s := NewStats(DefaultRules())
	s.Observe(measure.Observation{Function: measure.IMAPList, Duration: time.Millisecond, Class: measure.Timeout})
	snap := s.Snapshot()
	snap[measure.IMAPList].Errors[measure.Timeout] = 99
	snap[measure.IMAPList].Histogram.RecordValue(1)
	again := s.Snapshot()[measure.IMAPList]
	if again.Errors[measure.Timeout] != 1 || again.Histogram.TotalCount() != 1 {
		t.Fatalf("modifying a snapshot changed the stats: %+v", again)
	}
}

func TestInWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewStats(DefaultRules())
	obs := InWindow(s, t0, t0.Add(time.Minute))
	tests := []struct {
		start time.Time
		in    bool
	}{
		{t0.Add(-time.Nanosecond), false},
		{t0, true},
		{t0.Add(59 * time.Second), true},
		{t0.Add(time.Minute), false},
	}
	var want int64
	for _, tt := range tests {
		obs.Observe(measure.Observation{Function: measure.IMAPList, Start: tt.start, Duration: time.Millisecond})
		if tt.in {
			want++
		}
		if got := s.Snapshot()[measure.IMAPList].Operations; got != want {
			t.Fatalf("after start %v: Operations = %d, want %d", tt.start, got, want)
		}
	}
}

func TestHistogramCodec(t *testing.T) {
	h := NewHistogram()
	for i := range int64(5000) {
		h.RecordValue(i * 997 % HistogramHighest)
	}
	enc, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "HISTF") {
		t.Errorf("encoding %q… does not start with HISTF", enc[:10])
	}
	back, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatalf("DecodeHistogram() = %v", err)
	}
	if !back.Equals(h) {
		t.Error("round trip changed the histogram")
	}
	other, _ := hdrhistogram.New(1, 1000, 2).Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	for _, bad := range []string{"", "HISTF", "not base64!", string(other), strings.Repeat("A", MaxEncodedHistogram+1)} {
		if _, err := DecodeHistogram(bad); err == nil {
			t.Errorf("DecodeHistogram(%.20q) = nil error", bad)
		}
	}
}

func FuzzDecodeHistogram(f *testing.F) {
	h := NewHistogram()
	h.RecordValue(1234)
	enc, _ := EncodeHistogram(h)
	f.Add(enc)
	f.Add("")
	f.Add("HISTFAAAACB4nJNpmSzMwMDAxAABzFCaEUoz2X+AsQA")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := DecodeHistogram(s)
		if err != nil {
			return
		}
		if !sameGeometry(h) {
			t.Fatal("decoded a histogram of foreign geometry")
		}
		enc, err := EncodeHistogram(h)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := DecodeHistogram(enc)
		if err != nil || !back.Equals(h) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func BenchmarkObserve(b *testing.B) {
	s := NewStats(DefaultRules())
	obs := randomObservations(1, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Observe(obs[i&1023])
			i++
		}
	})
}
