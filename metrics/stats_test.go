package metrics

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
	all, a, b := NewStats(defaultLimits()), NewStats(defaultLimits()), NewStats(defaultLimits())
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
}

func TestStatsConcurrentObserve(t *testing.T) {
	obs := randomObservations(7, 8000)
	want := NewStats(defaultLimits())
	for _, o := range obs {
		want.Observe(o)
	}
	got := NewStats(defaultLimits())
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
	a := NewStats(defaultLimits())
	a.Observe(measure.Observation{Function: measure.IMAPList, Duration: time.Millisecond})
	other := defaultLimits()
	other[measure.IMAPConnect] = time.Second
	b := NewStats(other)
	b.Observe(measure.Observation{Function: measure.IMAPList, Duration: time.Millisecond})
	b.Observe(measure.Observation{Function: "extra", Duration: time.Millisecond})
	before := a.Snapshot()
	err := a.Merge(b)
	if err == nil || !strings.Contains(err.Error(), string(measure.IMAPConnect)) {
		t.Fatalf("Merge() = %v, want a limit error naming %q", err, measure.IMAPConnect)
	}
	equalStats(t, a.Snapshot(), before)
}

func TestSnapshotIsDeepCopy(t *testing.T) {
	s := NewStats(defaultLimits())
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
	s := NewStats(defaultLimits())
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
	s := NewStats(defaultLimits())
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
