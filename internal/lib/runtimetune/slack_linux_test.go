package runtimetune

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestInNanosleep(t *testing.T) {
	n := strconv.Itoa(syscall.SYS_NANOSLEEP)
	for _, tc := range []struct {
		line string
		want bool
	}{
		{n + " 0x7ffc2a1b3c40 0x0 0x0 0x0 0x0 0x0 0x7ffc2a1b3c18 0x46e2a3\n", true},
		{strconv.Itoa(syscall.SYS_FUTEX) + " 0xc000080148 0x80 0x0 0x0 0x0 0x0 0x7f 0x4\n", false},
		{"running\n", false},
		{"-1 0x7ffc2a1b3c18 0x46e2a3\n", false},
		{"", false},
	} {
		if got := inNanosleep([]byte(tc.line)); got != tc.want {
			t.Errorf("inNanosleep(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// TestFindSysmon scripts the threads' system calls: the one thread always
// in nanosleep is sysmon; a second one there as often, or none there
// often enough, finds nothing.
func TestFindSysmon(t *testing.T) {
	nanosleep := strconv.Itoa(syscall.SYS_NANOSLEEP) + " 0x1 0x0\n"
	futex := strconv.Itoa(syscall.SYS_FUTEX) + " 0x1 0x80\n"
	ids := func() ([]int, error) { return []int{100, 101, 102, 103}, nil }
	for _, tc := range []struct {
		name string
		// state returns thread tid's line in round r.
		state func(tid, r int) string
		want  int
	}{
		{"sysmon sleeps, the others park", func(tid, r int) string {
			if tid == 101 {
				return nanosleep
			}
			return futex
		}, 101},
		{"sysmon caught running once", func(tid, r int) string {
			if tid == 101 && r != 3 {
				return nanosleep
			}
			if tid == 101 {
				return "running\n"
			}
			return futex
		}, 101},
		{"another thread in a short usleep once", func(tid, r int) string {
			if tid == 101 || (tid == 103 && r == 2) {
				return nanosleep
			}
			return futex
		}, 101},
		{"two threads sleeping: neither", func(tid, r int) string {
			if tid == 101 || tid == 102 {
				return nanosleep
			}
			return futex
		}, 0},
		{"sysmon in its deep sleep (futex): none", func(tid, r int) string { return futex }, 0},
		{"in nanosleep half the time: none", func(tid, r int) string {
			if tid == 101 && r%2 == 0 {
				return nanosleep
			}
			return futex
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			round := -1
			listed := func() ([]int, error) { round++; return ids() }
			read := func(tid string) ([]byte, error) {
				n, _ := strconv.Atoi(tid)
				return []byte(tc.state(n, round)), nil
			}
			if got := findSysmon(read, listed, 6, 0); got != tc.want {
				t.Errorf("findSysmon = %d, want %d", got, tc.want)
			}
		})
	}
	failing := func() ([]int, error) { return nil, errors.New("no /proc") }
	if got := findSysmon(func(string) ([]byte, error) { return nil, nil }, failing, 3, 0); got != 0 {
		t.Errorf("without /proc: %d, want 0", got)
	}
}

// TestThreadSlackInProcess runs this test binary as a child with sysmon
// kept out of its deep sleep (as Apply does): it finds sysmon's thread,
// gives it the slack and takes it back, and the sweep gives a thread that
// inherited a slack the default again. Setting another thread's slack
// needs CAP_SYS_NICE: without it the child must find that it cannot.
func TestThreadSlackInProcess(t *testing.T) {
	if os.Getenv("SLACK_CHILD") == "1" {
		slackChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestThreadSlackInProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SLACK_CHILD=1", "GODEBUG="+Setting)
	out, err := cmd.CombinedOutput()
	got := strings.TrimSpace(string(out))
	if err != nil {
		t.Fatalf("child: %v\n%s", err, got)
	}
	want := fmt.Sprintf("sysmon found; on %[1]d; off default; swept default (was %[1]d)", sysmonSlack.Nanoseconds())
	if os.Geteuid() != 0 {
		want = "cannot set"
	}
	if got != want {
		if os.Geteuid() == 0 && strings.HasPrefix(got, "cannot set") {
			t.Skip("root without CAP_SYS_NICE (a container?): ", got)
		}
		t.Errorf("child said %q, want %q", got, want)
	}
}

func slackChild() {
	// sysmon backs off to its 10 ms sleeps after 200 ms. On a loaded
	// machine (CI runs packages' tests side by side) one look of 40 ms can
	// catch it awake more than once: the child looks again, up to 20
	// times. The test checks the mechanism, not one look's luck.
	var ts *threadSlack
	for range 20 {
		time.Sleep(200 * time.Millisecond)
		tid := findSysmon(func(tid string) ([]byte, error) {
			return os.ReadFile("/proc/self/task/" + tid + "/syscall")
		}, threadIDs, 8, 5*time.Millisecond)
		if tid == 0 {
			continue
		}
		if dflt, err := os.ReadFile(slackPath(tid)); err != nil || writeSlack(tid, dflt) != nil {
			fmt.Println("cannot set")
			os.Exit(0)
		}
		if ts = newThreadSlack(); ts != nil {
			break
		}
	}
	if ts == nil {
		fmt.Println("sysmon not found")
		os.Exit(0)
	}
	read := func(tid int) string {
		b, _ := os.ReadFile(slackPath(tid))
		v := strings.TrimSpace(string(b))
		if v == string(ts.dflt) {
			return "default"
		}
		return v
	}
	if ts.sysmon == os.Getpid() {
		fmt.Printf("sysmon %d is the main thread\n", ts.sysmon)
		os.Exit(0)
	}
	ts.Set(true)
	on := read(ts.sysmon)
	ts.Set(false)
	off := read(ts.sysmon)
	// A thread that inherited a slack: one that set its own, as a thread
	// sysmon started with the slack would have it.
	tidc, release := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, 29 /* PR_SET_TIMERSLACK */, uintptr(sysmonSlack), 0)
		tidc <- syscall.Gettid()
		<-release
	}()
	tid := <-tidc
	before := read(tid)
	ts.Sweep()
	fmt.Printf("sysmon found; on %s; off %s; swept %s (was %s)\n", on, off, read(tid), before)
	close(release)
	os.Exit(0)
}

// TestSweepListsWhenThreadsChange: a sweep lists the threads the first
// time, then only when the runtime's count of threads changed, or after
// sweepEvery sweeps without a listing.
func TestSweepListsWhenThreadsChange(t *testing.T) {
	threads, listed := 5, 0
	ts := &threadSlack{
		sysmon:       1,
		dflt:         []byte("50000"),
		known:        map[int]bool{1: true},
		countThreads: func() int { return threads },
		// IDs no process has: their slack cannot be read, and is left alone.
		listThreads: func() ([]int, error) { listed++; return []int{1, -2}, nil },
	}
	sweeps := func(n int) int {
		before := listed
		for range n {
			ts.Sweep()
		}
		return listed - before
	}
	if got := sweeps(1); got != 1 {
		t.Fatalf("first sweep listed %d times, want 1", got)
	}
	if got := sweeps(sweepEvery); got != 0 {
		t.Errorf("%d sweeps with the same count listed %d times, want 0", sweepEvery, got)
	}
	if got := sweeps(1); got != 1 {
		t.Errorf("sweep %d after a listing listed %d times, want 1", sweepEvery+1, got)
	}
	threads++
	if got := sweeps(1); got != 1 {
		t.Errorf("sweep after a new thread listed %d times, want 1", got)
	}
	if got := sweeps(3); got != 0 {
		t.Errorf("3 sweeps after that listed %d times, want 0", got)
	}
	threads--
	if got := sweeps(1); got != 1 {
		t.Errorf("sweep after a thread ended listed %d times, want 1", got)
	}
	if !ts.known[-2] || !ts.known[1] {
		t.Errorf("known %v, want the listed threads and sysmon", ts.known)
	}
}
