package report

import (
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/metrics"
)

// TestGeneratorBoundNeedsEvidence: lateness makes a run GENERATOR-BOUND
// only with at least GeneratorMinLate late arrivals: one session 20 s late
// of 46 (a server stuck at the start held it, or a GC pause) is not a
// generator short of anything; ten late ones are. Both of the lateness
// rules (the p99 and the late share) are held to it; CPU is not.
func TestGeneratorBoundNeedsEvidence(t *testing.T) {
	lateness := func(onTime, late int) *GeneratorHealth {
		h := metrics.NewHistogram()
		for range onTime {
			h.RecordValue(200) // 0.2 ms
		}
		for range late {
			h.RecordValue((20 * time.Second).Microseconds())
		}
		return &GeneratorHealth{LateTolerance: time.Second, SessionLateness: h}
	}
	for _, tc := range []struct {
		name    string
		run     Run
		bound   bool
		because string
	}{
		{"one late session of 46", Run{SessionCounts: SessionCounts{SessionsStarted: 46, SessionsLate: 1}, Generator: lateness(45, 1)}, false, ""},
		{"nine late of 100", Run{SessionCounts: SessionCounts{SessionsStarted: 100, SessionsLate: 9}, Generator: lateness(91, 9)}, false, ""},
		{"ten late of 100", Run{SessionCounts: SessionCounts{SessionsStarted: 100, SessionsLate: 10}, Generator: lateness(90, 10)}, true, "10 late"},
		{"ten late of 500 (2%), p99 on time", Run{SessionCounts: SessionCounts{SessionsStarted: 500, SessionsLate: 10}, Generator: lateness(490, 0)}, true, "10 of 500 sessions started late"},
		{"CPU, nothing late", Run{SessionCounts: SessionCounts{SessionsStarted: 46},
			Generator: &GeneratorHealth{CPUKnown: true, CPU: 19 * time.Second, CPUWindow: 10 * time.Second, Cores: 2}}, true, "generator CPU 95%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := tc.run.GeneratorBound()
			if got := len(why) > 0; got != tc.bound {
				t.Fatalf("GeneratorBound() = %q, want bound %v", why, tc.bound)
			}
			if tc.bound && !strings.Contains(strings.Join(why, "; "), tc.because) {
				t.Errorf("GeneratorBound() = %q, want it to say %q", why, tc.because)
			}
		})
	}
}
