package runtimetune

import (
	"slices"
	"testing"
	"time"
)

func TestNextSlack(t *testing.T) {
	const s = time.Second
	sample := func(cpu time.Duration, waits uint64, p99 time.Duration) coreSample {
		return coreSample{wall: s, cpu: cpu, waits: waits, p99Wait: p99}
	}
	quiet := sample(100*time.Millisecond, 500, 50*time.Microsecond)
	for _, tc := range []struct {
		name      string
		on        bool
		cur       int
		s         coreSample
		quiet     int
		want      bool
		wantQuiet int
	}{
		{"a first quiet interval counts", false, 1, quiet, 0, false, 1},
		{"the last quiet interval turns it on", false, 1, quiet, slackQuietIntervals - 1, true, slackQuietIntervals},
		{"on stays on while quiet", true, 1, quiet, slackQuietIntervals, true, slackQuietIntervals},
		{"half a P busy: off", true, 1, sample(500*time.Millisecond, 0, 0), slackQuietIntervals, false, 0},
		{"two Ps: off", true, 2, sample(100*time.Millisecond, 0, 0), slackQuietIntervals, false, 0},
		{"goroutines waited over 1 ms: off", true, 1, sample(100*time.Millisecond, 100, 2*time.Millisecond), slackQuietIntervals, false, 0},
		{"waits of 400 µs: stays on", true, 1, sample(100*time.Millisecond, 100, 400*time.Microsecond), slackQuietIntervals, true, slackQuietIntervals},
		{"one long wait: off", true, 1, sample(100*time.Millisecond, 1, 5*time.Millisecond), slackQuietIntervals, false, 0},
		{"short waits: quiet", false, 1, sample(100*time.Millisecond, 3, growWait), slackQuietIntervals - 1, true, slackQuietIntervals},
		{"idle: counts", false, 1, sample(0, 0, 0), 3, false, 4},
		{"an empty interval changes nothing", true, 1, coreSample{}, 4, true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, q := nextSlack(tc.on, tc.cur, tc.s, tc.quiet)
			if got != tc.want || q != tc.wantQuiet {
				t.Errorf("nextSlack(%v, %d, %+v, %d) = %v, %d; want %v, %d", tc.on, tc.cur, tc.s, tc.quiet, got, q, tc.want, tc.wantQuiet)
			}
		})
	}
}

// recordedSlack is a slackControl that records what it is told.
type recordedSlack struct{ calls []string }

func (r *recordedSlack) Set(on bool) {
	if on {
		r.calls = append(r.calls, "on")
	} else {
		r.calls = append(r.calls, "off")
	}
}
func (r *recordedSlack) Sweep() { r.calls = append(r.calls, "sweep") }

// TestAdaptSetsSlack drives the loop with scripted samples: the slack goes
// on after a quiet second, off at the first busy interval and when the
// adaptation stops; sysmon is looked for once, when first needed.
func TestAdaptSetsSlack(t *testing.T) {
	quiet := coreSample{wall: coresInterval, cpu: coresInterval / 10}
	busy := coreSample{wall: coresInterval, cpu: coresInterval * 6 / 10}
	var script []coreSample
	for range slackQuietIntervals + 1 {
		script = append(script, quiet)
	}
	script = append(script, busy)
	for range slackQuietIntervals {
		script = append(script, quiet)
	}
	rec := &recordedSlack{}
	looks := 0
	ticks := make(chan time.Time)
	stop, done := make(chan struct{}), make(chan struct{})
	next := 0
	go adapt(2, func() coreSample { s := script[next]; next++; return s }, func(int) {},
		func() slackControl { looks++; return rec }, ticks, stop, done)
	for range script {
		ticks <- time.Time{}
	}
	close(stop)
	<-done
	var want []string
	for _, on := range []string{"on", "on", "off"} {
		want = append(want, on, "sweep")
	}
	for range slackQuietIntervals - 1 {
		want = append(want, "off", "sweep")
	}
	want = append(want, "on", "sweep", "off", "sweep")
	if looks != 1 || !slices.Equal(rec.calls, want) {
		t.Errorf("looked for sysmon %d times, calls %v; want once, %v", looks, rec.calls, want)
	}
}

// TestAdaptWithoutSlack: when sysmon's slack cannot be set the loop looks
// once and adapts the cores as before.
func TestAdaptWithoutSlack(t *testing.T) {
	quiet := coreSample{wall: coresInterval, cpu: coresInterval / 10}
	looks := 0
	ticks := make(chan time.Time)
	stop, done := make(chan struct{}), make(chan struct{})
	go adapt(2, func() coreSample { return quiet }, func(int) {}, func() slackControl { looks++; return nil }, ticks, stop, done)
	for range 3 * slackQuietIntervals {
		ticks <- time.Time{}
	}
	close(stop)
	<-done
	if looks != 1 {
		t.Errorf("looked for sysmon %d times, want once", looks)
	}
}
