package compliance

import (
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// point is a timeline point starting at second sec, holding n operations
// of f at duration d each.
func point(t *testing.T, sec int, f measure.Function, n int, d time.Duration) metrics.Point {
	t.Helper()
	h := metrics.NewHistogram()
	for range n {
		metrics.RecordDuration(h, d)
	}
	enc, err := metrics.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return metrics.Point{
		Start:  time.Unix(int64(sec), 0),
		Length: 10 * time.Second,
		Functions: []metrics.FunctionPoint{{Function: f, Totals: metrics.Totals{Operations: int64(n)},
			Histogram: enc}},
	}
}

func TestSteadiness(t *testing.T) {
	ms := time.Millisecond
	rules := DefaultRules()
	c := measure.IMAPConnect
	tests := []struct {
		name   string
		points func(t *testing.T) []metrics.Point
		drift  bool
	}{
		{"flat", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, 100, 300*ms), point(t, 10, c, 100, 310*ms)}
		}, false},
		{"backlog building: 300 ms to 2.2 s", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, 100, 300*ms), point(t, 10, c, 100, 2200*ms)}
		}, true},
		{"a doubling below a fifth of the limit is no drift", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, 100, 40*ms), point(t, 10, c, 100, 900*ms)}
		}, false},
		{"at the floor with a doubling", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, 100, 500*ms), point(t, 10, c, 100, 1000*ms)}
		}, true},
		{"too few operations in a half", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, SteadyMinOps-1, 300*ms), point(t, 10, c, 100, 4*time.Second)}
		}, false},
		{"one point cannot tell", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, 100, 4*time.Second)}
		}, false},
		{"points out of order are sorted by start", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 20, c, 100, 3*time.Second), point(t, 0, c, 100, 300*ms), point(t, 10, c, 100, 300*ms)}
		}, true},
		{"falling response times are steady enough", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, 100, 3*time.Second), point(t, 10, c, 100, 300*ms)}
		}, false},
		{"the middle point of three is in neither half", func(t *testing.T) []metrics.Point {
			return []metrics.Point{point(t, 0, c, 100, 300*ms), point(t, 10, c, 1000, 4*time.Second), point(t, 20, c, 100, 300*ms)}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Steadiness(tt.points(t), rules)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ds) > 0; got != tt.drift {
				t.Fatalf("drift %v, want %v: %v", got, tt.drift, ds)
			}
			for _, d := range ds {
				if d.Function != c || d.Limit != DefaultLimit || d.FirstOps < SteadyMinOps || d.SecondOps < SteadyMinOps {
					t.Errorf("drift %+v", d)
				}
			}
		})
	}
}

func TestSteadinessSkipsUnruledAndNotMeasured(t *testing.T) {
	rules := DefaultRules()
	for i := range rules.Functions {
		if rules.Functions[i].Function == measure.IMAPConnect {
			rules.Functions[i].NotMeasured = true
		}
	}
	ps := []metrics.Point{point(t, 0, measure.IMAPConnect, 100, 300*time.Millisecond),
		point(t, 10, measure.IMAPConnect, 100, 4*time.Second)}
	ds, err := Steadiness(ps, rules)
	if err != nil || len(ds) != 0 {
		t.Fatalf("%v, %v; want no drift of a function not measured", ds, err)
	}
}

func TestDriftString(t *testing.T) {
	d := Drift{Function: measure.IMAPConnect, FirstP95: 310 * time.Millisecond, SecondP95: 2214 * time.Millisecond, Limit: 5 * time.Second}
	want := "IMAP Connect: p95 310 ms in the first half of the window, 2,214 ms in the second (limit 5 s)"
	if got := d.String(); got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	if !strings.Contains(Drift{Function: measure.SMTPData, SecondP95: 12345678 * time.Millisecond, Limit: time.Second}.String(), "12,345,678 ms") {
		t.Fatal("grouping")
	}
}
