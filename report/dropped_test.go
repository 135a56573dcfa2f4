package report

import (
	"slices"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// A run that could not offer its target load (sessions dropped) fails,
// however fast the server answered what it was offered.
func TestEvaluateDroppedSessions(t *testing.T) {
	rules := compliance.Rules{MaxErrorPercent: 1, Functions: []compliance.Rule{
		{Function: measure.IMAPConnect, Limit: 5 * time.Second, RequiredPercent: 95},
	}}
	stats := metrics.NewStats(rules.Limits())
	for range 100 {
		stats.Observe(measure.Observation{Function: measure.IMAPConnect, Start: time.Now(), Duration: time.Millisecond})
	}
	for _, tc := range []struct {
		started, dropped int64
		max              float64
		want             bool // compliant
	}{
		{1000, 0, 1, true},
		{991, 9, 1, true},   // 0.9% < 1%
		{990, 10, 1, false}, // exactly 1% fails "< 1%"
		{500, 500, 1, false},
		{500, 500, 0, true}, // 0 disables the check
		{0, 0, 1, true},     // nothing due: nothing dropped
	} {
		r := &Run{SessionCounts: SessionCounts{SessionsStarted: tc.started, SessionsDropped: tc.dropped, MaxDroppedPercent: tc.max}, Functions: stats.Snapshot()}
		r.Evaluate(rules)
		if r.Table.Compliant != tc.want {
			t.Errorf("started %d dropped %d max %v%%: compliant %v, want %v (failing %v)",
				tc.started, tc.dropped, tc.max, r.Table.Compliant, tc.want, r.Table.Failing)
		}
		if !tc.want && !slices.Contains(r.Table.Failing, DroppedRow) {
			t.Errorf("failing %v does not name %q", r.Table.Failing, DroppedRow)
		}
	}
}
