package compliance

import (
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// Delivery times are not operations: they neither count towards the error
// rate's operations nor its errors.
func TestErrorRateLeavesOutDeliveryTimes(t *testing.T) {
	rules := DefaultRules()
	s := metrics.NewStats(rules.Limits())
	obs := func(f measure.Function, n int, class measure.ErrorClass) {
		for range n {
			s.Observe(measure.Observation{Function: f, Start: time.Now(), Duration: time.Millisecond, Class: class})
		}
	}
	obs(measure.IMAPConnect, 99, measure.OK)
	obs(measure.IMAPConnect, 1, measure.Timeout) // 1 of 100 operations: fails "<1%"
	obs(measure.DeliveryLocal, 900, measure.OK)  // would dilute it to 0.1%
	obs(measure.DeliveryRemote, 5, measure.Other)
	e := Evaluate(s.Snapshot(), rules).Errors
	if e.Operations != 100 || e.Errors != 1 || e.Pass {
		t.Errorf("error rate over %d operations with %d errors, pass %v; want 100, 1, fail", e.Operations, e.Errors, e.Pass)
	}
}
