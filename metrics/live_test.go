package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// TestLive: operations and failures by class count from the start;
// cancelled operations and delivery times are no operations; the worst
// function is the highest p95 against its own limit, over the interval
// since the last take only.
func TestLive(t *testing.T) {
	l := NewLive(map[measure.Function]time.Duration{measure.IMAPList: time.Second, measure.SMTPData: 10 * time.Second})
	for range 20 {
		l.Observe(measure.Observation{Function: measure.IMAPList, Duration: 300 * time.Millisecond})
		l.Observe(measure.Observation{Function: measure.SMTPData, Duration: 2 * time.Second}) // longer, but 20% of its limit
	}
	l.Observe(measure.Observation{Function: measure.SMTPData, Class: measure.Timeout, Err: errors.New("t")})
	l.Observe(measure.Observation{Function: measure.IMAPList, Class: measure.Cancelled})
	l.Observe(measure.Observation{Function: measure.DeliveryLocal, Duration: time.Hour})
	c := l.Counts()
	if c.Operations != 41 || c.Errors[measure.Timeout] != 1 || len(c.Errors) != 1 {
		t.Errorf("counts %+v: want 41 operations, 1 timeout", c)
	}
	w, ok := l.TakeWorst()
	if !ok || w.Function != measure.IMAPList || w.P95 < 299*time.Millisecond || w.P95 > 301*time.Millisecond || w.Limit != time.Second || w.Operations != 20 {
		t.Errorf("worst %+v %v: want IMAP LIST at 300 ms of 1 s", w, ok)
	}
	if _, ok := l.TakeWorst(); ok {
		t.Error("a second take with nothing new found a worst")
	}
	l.Observe(measure.Observation{Function: measure.SMTPData, Duration: 9 * time.Second})
	if w, ok := l.TakeWorst(); !ok || w.Function != measure.SMTPData {
		t.Errorf("new interval: worst %+v", w)
	}
	if l.Counts().Operations != 42 {
		t.Error("counts are since the start, not the interval")
	}
}

func TestAutoInterval(t *testing.T) {
	for m, want := range map[time.Duration]time.Duration{
		10 * time.Second: time.Second, 40 * time.Second: 2 * time.Second, time.Minute: 2 * time.Second,
		10 * time.Minute: 20 * time.Second, 30 * time.Minute: time.Minute, time.Hour: 2 * time.Minute,
		3 * time.Hour: 10 * time.Minute, 100 * time.Hour: time.Hour, time.Millisecond: time.Second,
	} {
		if got := AutoInterval(m); got != want {
			t.Errorf("AutoInterval(%v) = %v, want %v", m, got, want)
		}
	}
}

// TestLiveTakeReusesHistograms: once each function has run, an interval
// of observations and its take allocate nothing: the taken histograms are
// cleared and serve the interval after next (a dense histogram per
// function per take was 184 KiB each). A function that ran in an earlier
// interval but not in this one is not its worst.
func TestLiveTakeReusesHistograms(t *testing.T) {
	l := NewLive(map[measure.Function]time.Duration{measure.IMAPList: time.Second, measure.SMTPData: 10 * time.Second})
	cycle := func() {
		l.Observe(measure.Observation{Function: measure.IMAPList, Duration: 300 * time.Millisecond})
		l.Observe(measure.Observation{Function: measure.SMTPData, Duration: time.Second})
		if _, ok := l.TakeWorst(); !ok {
			t.Fatal("no worst")
		}
	}
	cycle()
	cycle() // both sets now hold a histogram per function
	if allocs := testing.AllocsPerRun(20, cycle); allocs != 0 {
		t.Errorf("an interval and its take allocated %.1f times, want 0", allocs)
	}
	l.Observe(measure.Observation{Function: measure.SMTPData, Duration: 9 * time.Second})
	w, ok := l.TakeWorst()
	if !ok || w.Function != measure.SMTPData || w.Operations != 1 {
		t.Errorf("worst %+v %v: want SMTP Data alone (IMAP LIST's reused histogram is empty)", w, ok)
	}
	for range 2 {
		if w, ok := l.TakeWorst(); ok {
			t.Errorf("an empty interval's worst %+v", w)
		}
	}
}
