package metrics

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// libraryEncoding is what EncodeHistogram wrote until it had its own
// encoder: hdrhistogram-go's V2 compressed encoding.
func libraryEncoding(t testing.TB, h *hdrhistogram.Histogram) string {
	t.Helper()
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEncodeHistogramMatchesLibrary: EncodeHistogram's bytes are the
// library's, for empty, tiny, saturated and sparse histograms, counts
// that need every varint length (up to the 9-byte form), histograms
// decoded, merged and reset, and other geometries; and one encoder
// reused (the pool) gives the same bytes as a fresh one.
func TestEncodeHistogramMatchesLibrary(t *testing.T) {
	type build func() *hdrhistogram.Histogram
	ours := func(f func(h *hdrhistogram.Histogram)) build {
		return func() *hdrhistogram.Histogram { h := NewHistogram(); f(h); return h }
	}
	rng := rand.New(rand.NewPCG(7, 37))
	cases := map[string]build{
		"empty":           ours(func(*hdrhistogram.Histogram) {}),
		"one value at 1":  ours(func(h *hdrhistogram.Histogram) { h.RecordValue(1) }),
		"one value at 0":  ours(func(h *hdrhistogram.Histogram) { h.RecordValue(0) }),
		"the largest":     ours(func(h *hdrhistogram.Histogram) { h.RecordValue(h.HighestTrackableValue()) }),
		"1 µs and 1 h":    ours(func(h *hdrhistogram.Histogram) { h.RecordValue(1); h.RecordValue(3_600_000_000) }),
		"a session's ops": ours(func(h *hdrhistogram.Histogram) { recordRandom(h, rng, 500, 200, 5000) }),
		"dense":           ours(func(h *hdrhistogram.Histogram) { recordRandom(h, rng, 100_000, 1, 100_000) }),
		"every varint length": ours(func(h *hdrhistogram.Histogram) {
			v := int64(1)
			for shift := 0; shift < 62; shift += 7 {
				h.RecordValues(v, 1<<shift) // counts of 1..9 varint bytes
				h.RecordValues(v+1, 1<<shift-1)
				v += 10
			}
		}),
		"a count near the largest": ours(func(h *hdrhistogram.Histogram) { h.RecordValues(1000, math.MaxInt64/2) }),
		"recorded then reset": ours(func(h *hdrhistogram.Histogram) {
			recordRandom(h, rng, 100, 1, 1000)
			h.Reset()
		}),
		"merged": ours(func(h *hdrhistogram.Histogram) {
			a, b := NewHistogram(), NewHistogram()
			recordRandom(a, rng, 300, 100, 2000)
			recordRandom(b, rng, 300, 1_000_000, 30_000_000)
			h.Merge(a)
			h.Merge(b)
		}),
		"decoded": func() *hdrhistogram.Histogram {
			h := NewHistogram()
			recordRandom(h, rng, 1000, 50, 60_000_000)
			d, err := DecodeHistogram(libraryEncoding(t, h))
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		"another geometry": func() *hdrhistogram.Histogram {
			h := hdrhistogram.New(1, 1000, 2)
			recordRandom(h, rng, 200, 1, 1000)
			return h
		},
	}
	for name, b := range cases {
		h := b()
		want := libraryEncoding(t, h)
		for i := range 3 { // the second and third through a reused encoder
			got, err := EncodeHistogram(h)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got != want {
				t.Fatalf("%s, call %d: EncodeHistogram differs from the library:\n got %s\nwant %s", name, i+1, got, want)
			}
		}
	}
	// Random histograms, many encoders at once (the pool under contention).
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 99))
			for range 50 {
				h := NewHistogram()
				recordRandom(h, r, r.IntN(2000), 1+r.Int64N(1000), 1+r.Int64N(3_600_000_000))
				got, err := EncodeHistogram(h)
				if err != nil {
					t.Error(err)
					return
				}
				if want := libraryEncoding(t, h); got != want {
					t.Errorf("random histogram (%d values): EncodeHistogram differs from the library", h.TotalCount())
					return
				}
			}
		})
	}
	wg.Wait()
}

func recordRandom(h *hdrhistogram.Histogram, rng *rand.Rand, n int, lo, hi int64) {
	for range n {
		h.RecordValue(lo + rng.Int64N(max(hi-lo, 1)))
	}
}

// FuzzEncodeHistogram: any set of durations encodes to the library's bytes.
func FuzzEncodeHistogram(f *testing.F) {
	f.Add(int64(1), int64(500), uint16(3))
	f.Add(int64(3_600_000_000), int64(1), uint16(1))
	f.Fuzz(func(t *testing.T, a, b int64, n uint16) {
		h := NewHistogram()
		for i := range int64(n % 512) {
			RecordDuration(h, time.Duration(a+i*b)*time.Microsecond)
		}
		got, err := EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		if want := libraryEncoding(t, h); got != want {
			t.Fatalf("EncodeHistogram differs from the library for a=%d b=%d n=%d", a, b, n)
		}
	})
}

// BenchmarkEncodeHistogram: one interval's histogram of one function.
func BenchmarkEncodeHistogram(b *testing.B) {
	h := NewHistogram()
	recordRandom(h, rand.New(rand.NewPCG(1, 2)), 500, 200, 5_000_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeHistogram(h); err != nil {
			b.Fatal(err)
		}
	}
}
