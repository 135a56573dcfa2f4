package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessCountsWork: computing shows up as CPU time, which never goes
// backwards. The loop goes by CPU time, not the wall clock: on a shared
// machine spinning for a while need not be given the CPU.
func TestProcessCountsWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("not measured on this system")
	}
	before, ok := Process()
	if !ok {
		t.Fatal("CPU time not known on a unix system")
	}
	last, x := before, uint64(1)
	for deadline := time.Now().Add(10 * time.Second); last-before < 50*time.Millisecond && time.Now().Before(deadline); {
		for range 100000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		now, _ := Process()
		if now < last {
			t.Fatalf("CPU time went back from %v to %v", last, now)
		}
		last = now
	}
	if last-before < 50*time.Millisecond {
		t.Errorf("10 s of computing (%d) counted %v of CPU time", x, last-before)
	}
}
