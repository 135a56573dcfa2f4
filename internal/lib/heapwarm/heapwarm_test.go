//go:build linux

package heapwarm

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// live is the test's steady live heap: a target's mailboxes.
var live [][]byte

// churn allocates and writes n bytes of short-lived 64 KiB buffers, as a
// target serving a run does, and returns the minor page faults it took.
func churn(n int) int64 {
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	page := os.Getpagesize()
	var last []byte
	for done := 0; done < n; done += 64 << 10 {
		b := make([]byte, 64<<10)
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		last = b
	}
	runtime.KeepAlive(last)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	return after.Minflt - before.Minflt
}

// TestHelperProcess is run by TestWarmSavesFaults in a process of its own
// (a fresh heap per case): it builds a 256 MB live heap, warms it or not,
// then churns 192 MB and prints the faults the churn took.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("HEAPWARM_HELPER")
	if mode == "" {
		t.Skip("run by TestWarmSavesFaults")
	}
	page := os.Getpagesize()
	for range 256 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		live = append(live, b)
	}
	var touched int64
	if mode == "warm" {
		touched = Warm()
	}
	fmt.Printf("faults %d touched %d\n", churn(192<<20), touched)
}

func helper(t *testing.T, mode string) (faults, touched int64) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "HEAPWARM_HELPER="+mode, "GOGC=100", "GOMEMLIMIT=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", mode, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(line, "faults "); ok {
			a, b, _ := strings.Cut(f, " touched ")
			faults, _ = strconv.ParseInt(a, 10, 64)
			touched, _ = strconv.ParseInt(b, 10, 64)
			return faults, touched
		}
	}
	t.Fatalf("%s: no result in\n%s", mode, out)
	return 0, 0
}

// TestWarmSavesFaults: after Warm, a process with a large live heap takes
// far fewer page faults growing into its collector's goal than without.
func TestWarmSavesFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("two processes of 450 MB each")
	}
	cold, _ := helper(t, "cold")
	warm, touched := helper(t, "warm")
	t.Logf("faults while churning 192 MB over a 256 MB live heap: %d cold, %d after warming %d MB", cold, warm, touched>>20)
	if touched < 128<<20 {
		t.Errorf("Warm touched %d MB, want most of the room (about 256 MB)", touched>>20)
	}
	if warm*2 > cold {
		t.Errorf("%d faults after Warm, %d without: want under half", warm, cold)
	}
}

// TestWarmSmallHeap: a heap below MinRoom is left alone.
func TestWarmSmallHeap(t *testing.T) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc >= MinRoom {
		t.Skipf("the test binary's heap is already %d MB", ms.HeapAlloc>>20)
	}
	if n := Warm(); n != 0 {
		t.Errorf("Warm touched %d bytes of a %d-byte heap", n, ms.HeapAlloc)
	}
}
