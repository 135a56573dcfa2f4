package compliance

import (
	"fmt"
	"sort"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// The steady-state rule (docs/size.md, "Steady state"). A server past its
// knee does not fail at once under an open model: its backlog grows for tens
// of seconds, and a window that ends before the backlog shows passes a rate
// the server cannot carry. So a window is steady only when no function's
// p95 in the second half of the window is SteadyRise times or more its p95
// in the first half while also at or above SteadyFloor of its limit. Below
// the floor a doubling (40 ms to 80 ms, say) is no sign of a limit being
// reached; a half with fewer than SteadyMinOps operations of a function is
// too small for its p95 to be compared.
const (
	SteadyRise   = 2.0
	SteadyFloor  = 0.2
	SteadyMinOps = 30
)

// Drift is a function whose response times rose across the measurement
// window: the steady-state rule's finding.
type Drift struct {
	Function measure.Function
	// FirstP95 and SecondP95 are the function's p95 over the operations that
	// started in the first and in the second half of the window, of
	// FirstOps and SecondOps operations.
	FirstP95, SecondP95 time.Duration
	FirstOps, SecondOps int64
	Limit               time.Duration
}

// String renders d, e.g. "IMAP Connect: p95 310 ms in the first half of the
// window, 2,214 ms in the second (limit 5 s)".
func (d Drift) String() string {
	return fmt.Sprintf("%s: p95 %s ms in the first half of the window, %s ms in the second (limit %s s)",
		d.Function, groupMS(d.FirstP95), groupMS(d.SecondP95), FormatLimitSeconds(d.Limit))
}

func groupMS(d time.Duration) string {
	ms := d.Milliseconds()
	s := fmt.Sprint(ms)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Steadiness applies the steady-state rule to a measurement window's
// timeline (report.Run.Timeline) against rules: it returns the functions
// that drifted, in rule order (none: the window is steady, or too short to
// tell: fewer than two points). The halves are the earlier and the later
// half of the points by start (the middle point of an odd number is in
// neither); their percentiles come from the points' merged histograms, so
// they are exact. Functions not measured or without a rule are left out.
// It doesn't perform I/O.
func Steadiness(timeline []metrics.Point, rules Rules) ([]Drift, error) {
	if len(timeline) < 2 {
		return nil, nil
	}
	ps := append([]metrics.Point(nil), timeline...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Start.Before(ps[j].Start) })
	first, _, err := metrics.MergePoints(ps[:len(ps)/2]...)
	if err != nil {
		return nil, fmt.Errorf("steady state: %w", err)
	}
	second, _, err := metrics.MergePoints(ps[(len(ps)+1)/2:]...)
	if err != nil {
		return nil, fmt.Errorf("steady state: %w", err)
	}
	of := func(p metrics.Point, f measure.Function) metrics.Totals {
		for _, fp := range p.Functions {
			if fp.Function == f {
				return fp.Totals
			}
		}
		return metrics.Totals{}
	}
	var out []Drift
	for _, r := range rules.ordered() {
		if r.NotMeasured || r.Limit <= 0 {
			continue
		}
		a, b := of(first, r.Function), of(second, r.Function)
		if a.Operations < SteadyMinOps || b.Operations < SteadyMinOps {
			continue
		}
		if float64(b.P95) >= SteadyRise*float64(a.P95) && float64(b.P95) >= SteadyFloor*float64(r.Limit) {
			out = append(out, Drift{Function: r.Function, FirstP95: a.P95, SecondP95: b.P95,
				FirstOps: a.Operations, SecondOps: b.Operations, Limit: r.Limit})
		}
	}
	return out, nil
}
