package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// Operations mailbench cut are reported per function, apart from the
// server's errors, and survive the JSON round trip and a merge.
func TestCancelledReportedApart(t *testing.T) {
	rules := compliance.Rules{MaxErrorPercent: 1, Functions: []compliance.Rule{
		{Function: measure.IMAPConnect, Limit: 5 * time.Second, RequiredPercent: 95},
		{Function: measure.SMTPData, Limit: 5 * time.Second, RequiredPercent: 95},
	}}
	stats := metrics.NewStats(rules.Limits())
	obs := func(f measure.Function, n int, c measure.ErrorClass) {
		for range n {
			stats.Observe(measure.Observation{Function: f, Start: time.Now(), Duration: time.Millisecond, Class: c})
		}
	}
	obs(measure.IMAPConnect, 50, measure.OK)
	obs(measure.SMTPData, 50, measure.OK)
	obs(measure.IMAPConnect, 3, measure.Cancelled)
	obs(measure.SMTPData, 1, measure.Cancelled)
	r := &Run{Tool: "mailbench", Functions: stats.Snapshot()}
	r.Evaluate(rules)
	if !r.Table.Compliant || r.Table.Errors.Errors != 0 || r.Table.Errors.Cancelled != 4 {
		t.Fatalf("table %+v: want compliant, 0 errors, 4 cancelled", r.Table.Errors)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if want := "Cancelled by mailbench (not server errors, not in the table): SMTP Data 1, IMAP Connect 3\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	other := *back
	other.Seed++ // another generator's shard: the same run twice is refused
	m, err := Merge(back, &other)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Functions[measure.IMAPConnect].Cancelled; got != 6 {
		t.Errorf("merged IMAP Connect cancelled %d, want 6", got)
	}
	if m.Table.Errors.Cancelled != 8 || m.Table.Errors.Errors != 0 || !m.Table.Compliant {
		t.Errorf("merged error row %+v: want 8 cancelled, no errors, compliant", m.Table.Errors)
	}
}

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
