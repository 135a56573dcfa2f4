package compliance

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

func TestDefaultRules(t *testing.T) {
	r := DefaultRules()
	if err := r.Validate(); err != nil {
		t.Fatalf("DefaultRules().Validate() = %v", err)
	}
	if got, want := len(r.Functions), len(measure.AllFunctions)-len(measure.ClientFunctions); got != want {
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

func statsWith(f measure.Function, limit time.Duration, within, slow, failed int64) *metrics.FunctionStats {
	s := metrics.NewFunctionStats(f, limit)
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
		stats         []*metrics.FunctionStats
		rules         Rules
		wantPass      bool
		wantPct       string // FormatCompliant of the row
		wantReason    string
		wantErrorPass bool
		wantFailing   []string
	}{
		{"exactly 95.00% fails >95%", []*metrics.FunctionStats{statsWith(f, 5*time.Second, 95, 5, 0)}, one,
			false, "95.00", "95.00% is not >95%", true, []string{string(f)}},
		{"95.01% passes", []*metrics.FunctionStats{statsWith(f, 5*time.Second, 9501, 499, 0)}, one,
			true, "95.01", "", true, nil},
		{"all within", []*metrics.FunctionStats{statsWith(f, 5*time.Second, 10, 0, 0)}, one,
			true, "100.00", "", true, nil},
		{"never ran fails", nil, one,
			false, "0.00", "no operations", false, []string{string(f), ErrorRateName}},
		{"present but empty fails", []*metrics.FunctionStats{metrics.NewFunctionStats(f, 5*time.Second)}, one,
			false, "0.00", "no operations", false, []string{string(f), ErrorRateName}},
		{"error rate exactly 1% fails", []*metrics.FunctionStats{statsWith(f, 5*time.Second, 99, 0, 1)}, one,
			true, "99.00", "", false, []string{ErrorRateName}},
		{"error rate 0.99% passes", []*metrics.FunctionStats{statsWith(f, 5*time.Second, 9901, 0, 99)}, one,
			true, "99.01", "", true, nil},
		{"unruled function's errors count", []*metrics.FunctionStats{
			statsWith(f, 5*time.Second, 100, 0, 0), statsWith("custom", 0, 0, 0, 2)}, one,
			true, "100.00", "", false, []string{ErrorRateName}},
		{"limit mismatch fails", []*metrics.FunctionStats{statsWith(f, time.Second, 100, 0, 0)}, one,
			false, "0.00", "counted against a 1s limit", true, []string{string(f)}},
		{"custom required percent", []*metrics.FunctionStats{statsWith(f, 5*time.Second, 90, 10, 0)},
			Rules{Functions: []Rule{{Function: f, Limit: 5 * time.Second, RequiredPercent: 89.5}}, MaxErrorPercent: 1},
			true, "90.00", "", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := make(map[measure.Function]*metrics.FunctionStats)
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
	stats := metrics.NewStats(rules.Limits())
	for i := range 1000 {
		stats.Observe(measure.Observation{Function: measure.IMAPFetchBody, Duration: time.Duration(i+1) * time.Millisecond})
	}
	tab := Evaluate(stats.Snapshot(), rules)
	var got []measure.Function
	for _, r := range tab.Rows {
		got = append(got, r.Function)
	}
	want := append(append(slices.Clone(measure.SPECFunctions), measure.DeliveryLocal, measure.DeliveryRemote), "zz custom")
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

// A function the config cannot run (send weight 0: no IMAP APPEND) is not
// measured: its row neither passes nor fails, and the table says the run is
// not a full one; a function the config can run fails without operations.
func TestNotMeasuredRows(t *testing.T) {
	rules := Rules{MaxErrorPercent: 1, Functions: []Rule{
		{Function: measure.IMAPConnect, Limit: time.Second, RequiredPercent: 95},
		{Function: measure.IMAPAppend, Limit: time.Second, RequiredPercent: 95, NotMeasured: true},
		{Function: measure.IMAPList, Limit: time.Second, RequiredPercent: 95},
	}}
	s := metrics.NewStats(rules.Limits())
	for range 10 {
		s.Observe(measure.Observation{Function: measure.IMAPConnect, Start: time.Now(), Duration: time.Millisecond})
	}
	tab := Evaluate(s.Snapshot(), rules)
	if !slices.Equal(tab.NotMeasured, []string{string(measure.IMAPAppend)}) || !slices.Equal(tab.Failing, []string{string(measure.IMAPList)}) {
		t.Errorf("not measured %v, failing %v; want [APPEND], [LIST]", tab.NotMeasured, tab.Failing)
	}
	if got, _ := tab.Rules().Rule(measure.IMAPAppend); !got.NotMeasured || len(tab.Rules().Functions) != 3 {
		t.Errorf("rules recovered from the table: %+v", tab.Rules().Functions)
	}
}
