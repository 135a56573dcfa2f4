package report

import (
	"strings"
	"testing"
	"time"
)

// The generator is the bottleneck when it starts sessions later than the
// tolerance (p99), uses more than 90% of its cores, or times an operation
// longer than its own deadline allows; then the run is no server result.
func TestGeneratorBoundRule(t *testing.T) {
	ok := func() *GeneratorHealth {
		return &GeneratorHealth{LateTolerance: time.Second, SessionLateness: latenessOf(1000, 2*time.Millisecond),
			CPUKnown: true, CPU: 60 * time.Second, CPUWindow: time.Minute, Cores: 2}
	}
	for _, tc := range []struct {
		name   string
		change func(g *GeneratorHealth)
		want   string // "" when the generator kept up
	}{
		{"kept up", func(*GeneratorHealth) {}, ""},
		{"late p99", func(g *GeneratorHealth) { g.SessionLateness.RecordValues(1_500_000, 20) }, "sessions started late: p99 1,500"},
		{"late under 1%", func(g *GeneratorHealth) { g.SessionLateness.RecordValues(1_500_000, 5) }, ""},
		{"inbound late", func(g *GeneratorHealth) { g.InboundLateness = latenessOf(10, 3*time.Second) }, "inbound mail started late"},
		{"CPU 95%", func(g *GeneratorHealth) { g.CPU = 114 * time.Second }, "generator CPU 95% of 2 cores"},
		{"CPU 90%", func(g *GeneratorHealth) { g.CPU = 108 * time.Second }, ""},
		{"stall", func(g *GeneratorHealth) {
			g.Stalls, g.StallLimit, g.WorstStall = 1, 11*time.Second, 838860*time.Millisecond
		},
			"1 operation timed longer than op_timeout allows (11s, worst 838,860.00 ms)"},
	} {
		g := ok()
		tc.change(g)
		r := &Run{Generator: g}
		why := joinReasons(r.GeneratorBound())
		if tc.want == "" && why != "" || !strings.Contains(why, tc.want) {
			t.Errorf("%s: reasons %q, want %q", tc.name, why, tc.want)
		}
		if bound := strings.HasPrefix(r.NotAResult(), "GENERATOR-BOUND: "); bound != (tc.want != "") {
			t.Errorf("%s: not a result %q", tc.name, r.NotAResult())
		}
	}
	if lo, hi := PoissonBand(80); lo != 63 || hi != 98 {
		t.Errorf("Poisson band of 80: %d–%d, want 63–98", lo, hi)
	}
}
