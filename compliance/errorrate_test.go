package compliance

import (
	"slices"
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

// Operations that mailbench cut (end of ramp-down, Ctrl-C) are not the
// server's: they are counted apart and neither fail a row nor the error rate.
func TestCancelledOperationsAreNotServerErrors(t *testing.T) {
	rules := DefaultRules()
	s := metrics.NewStats(rules.Limits())
	for range 100 {
		s.Observe(measure.Observation{Function: measure.IMAPConnect, Start: time.Now(), Duration: time.Millisecond})
	}
	for range 20 { // a fifth as many again, cut at the end of ramp-down
		s.Observe(measure.Observation{Function: measure.IMAPConnect, Start: time.Now(), Duration: time.Hour, Class: measure.Cancelled})
	}
	tab := Evaluate(s.Snapshot(), rules)
	e := tab.Errors
	if e.Operations != 100 || e.Errors != 0 || e.Cancelled != 20 || !e.Pass {
		t.Errorf("error row %+v; want 100 operations, 0 errors, 20 cancelled, pass", e)
	}
	row := tab.Rows[slices.IndexFunc(tab.Rows, func(r Row) bool { return r.Function == measure.IMAPConnect })]
	if row.Operations != 100 || row.WithinLimit != 100 || row.Cancelled != 20 || !row.Pass || row.Max > time.Second || row.ErrorsByClass != nil {
		t.Errorf("IMAP Connect row %+v; want 100 operations all within the limit, 20 cancelled, no errors, pass", row)
	}
}
