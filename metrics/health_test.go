package metrics

import (
	"runtime"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/lib/cputime"
	"github.com/mailbench/mailbench/measure"
)

// The generator's CPU and GC use are measured from the process itself: a
// goroutine that spins until the process has used 200 ms of CPU shows as
// that (the machine is shared: spinning by the wall clock would not), and
// forced collections as GC cycles with a pause.
func TestGeneratorUse(t *testing.T) {
	a := SampleProcess()
	if !a.CPUKnown {
		t.Skip("no rusage on this platform")
	}
	deadline := time.Now().Add(10 * time.Second)
	for c, _ := cputime.Process(); c-a.CPU < 200*time.Millisecond && time.Now().Before(deadline); c, _ = cputime.Process() {
		for range 10000 {
		}
	}
	for range 3 {
		runtime.GC()
	}
	u := Use(a, SampleProcess())
	if u.CPU < 200*time.Millisecond || u.CPU > u.Window*time.Duration(u.Cores)+10*time.Millisecond {
		t.Errorf("CPU %v over %v on %d cores after spinning for 200 ms of CPU", u.CPU, u.Window, u.Cores)
	}
	if p := u.CPUPercent(); p <= 0 || p > 101 {
		t.Errorf("CPU %.1f%% of the cores available", p)
	}
	if u.GCCycles < 3 || u.GCPause <= 0 {
		t.Errorf("after 3 forced collections: %d cycles, %v paused", u.GCCycles, u.GCPause)
	}
}

// An operation observed longer than op_timeout + margin cannot have been
// timed by a running generator: it is counted and clamped, other operations
// and delivery times pass unchanged.
func TestStallGuard(t *testing.T) {
	g := &StallGuard{Limit: 10*time.Second + StallMargin(10*time.Second)}
	if g.Limit != 11*time.Second {
		t.Fatalf("limit %v, want 11s", g.Limit)
	}
	ok := measure.Observation{Function: measure.IMAPConnect, Duration: 10500 * time.Millisecond, Class: measure.Timeout}
	if got := g.Check(ok); got.Duration != ok.Duration {
		t.Errorf("a timeout just over op_timeout was clamped to %v", got.Duration)
	}
	bad := measure.Observation{Function: measure.IMAPConnect, Duration: 838860 * time.Millisecond, Class: measure.Timeout}
	if got := g.Check(bad); got.Duration != g.Limit || got.Class != measure.Timeout {
		t.Errorf("838,860 ms connect: %v %s, want clamped to %v", got.Duration, got.Class, g.Limit)
	}
	dl := measure.Observation{Function: measure.DeliveryLocal, Duration: time.Hour}
	if got := g.Check(dl); got.Duration != time.Hour {
		t.Errorf("delivery time clamped to %v", got.Duration)
	}
	if g.Count() != 1 || g.Worst() != 838860*time.Millisecond {
		t.Errorf("count %d worst %v; want 1, 838.86s", g.Count(), g.Worst())
	}
}
