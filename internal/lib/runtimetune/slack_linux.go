package runtimetune

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// threadSlack is slackControl on Linux: sysmon's thread is the one thread
// of the process that sleeps in nanosleep (the runtime's usleep; every
// other thread parks in futex or epoll_pwait), found from
// /proc/self/task/*/syscall; slack is written to /proc/TID/timerslack_ns
// (Linux 4.6 and later), which for a thread other than the caller's needs
// CAP_SYS_NICE.
type threadSlack struct {
	sysmon int          // sysmon's thread ID
	dflt   []byte       // the slack it had, as the kernel prints it
	known  map[int]bool // threads whose slack was checked
	on     bool

	// The runtime's threads at the last sweep, and the sweeps skipped
	// since: a sweep lists /proc/self/task (an open, two getdents, a
	// close and an allocation per thread, ten times a second), and the
	// threads of a generator are started in its first seconds and then
	// hardly ever. threads counts the runtime's Ms (runtime.ThreadCreateProfile:
	// a walk of its list, no system call, no lock), which only grows
	// while no thread exits; a thread exits only when a goroutine
	// locked to it ends, and then a thread started after it could leave
	// the count unchanged: a full sweep every sweepEvery calls catches that.
	threads int
	skipped int

	countThreads func() int            // runtimeThreads; tests replace it
	listThreads  func() ([]int, error) // threadIDs; tests replace it
}

// sweepEvery is how many Sweeps in a row may skip the listing while the
// runtime's count of threads stays the same (5 s of the adaptation's ticks).
const sweepEvery = 50

// newThreadSlack finds sysmon's thread and checks that its slack may be
// set; nil when not (another OS thread layout, no /proc, no permission).
func newThreadSlack() *threadSlack {
	tid := findSysmon(func(tid string) ([]byte, error) {
		return os.ReadFile("/proc/self/task/" + tid + "/syscall")
	}, threadIDs, 8, 5*time.Millisecond)
	if tid == 0 {
		return nil
	}
	dflt, err := os.ReadFile(slackPath(tid))
	if err != nil || writeSlack(tid, dflt) != nil {
		return nil
	}
	return &threadSlack{sysmon: tid, dflt: bytes.TrimSpace(dflt), known: map[int]bool{tid: true}, countThreads: runtimeThreads, listThreads: threadIDs}
}

// runtimeThreads returns the count of the runtime's threads (Ms).
func runtimeThreads() int {
	n, _ := runtime.ThreadCreateProfile(nil)
	return n
}

func (t *threadSlack) Set(on bool) {
	if on == t.on {
		return
	}
	v := t.dflt
	if on {
		v = strconv.AppendInt(nil, sysmonSlack.Nanoseconds(), 10)
	}
	if writeSlack(t.sysmon, v) == nil {
		t.on = on
	}
}

// Sweep checks the threads it has not seen yet and gives each that does
// not have the default slack the default. A thread ID seen once is not
// checked again. It lists the threads only when the runtime's count of
// them changed since the last listing, or every sweepEvery calls.
func (t *threadSlack) Sweep() {
	n := t.countThreads()
	if n == t.threads && t.skipped < sweepEvery {
		t.skipped++
		return
	}
	t.threads, t.skipped = n, 0
	ids, err := t.listThreads()
	if err != nil {
		return
	}
	seen := make(map[int]bool, len(ids))
	for _, tid := range ids {
		seen[tid] = true
		if t.known[tid] {
			continue
		}
		if v, err := os.ReadFile(slackPath(tid)); err == nil && !bytes.Equal(bytes.TrimSpace(v), t.dflt) {
			_ = writeSlack(tid, t.dflt)
		}
	}
	seen[t.sysmon] = true
	t.known = seen
}

// threadIDs lists the process's threads.
func threadIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(entries))
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, tid)
		}
	}
	return ids, nil
}

// findSysmon samples every thread's system call rounds times, pause
// apart, and returns the one thread found in nanosleep in all but one of
// them and no other thread found there more than once; 0 if none is.
func findSysmon(readSyscall func(tid string) ([]byte, error), ids func() ([]int, error), rounds int, pause time.Duration) int {
	counts := map[int]int{}
	for r := range rounds {
		if r > 0 {
			time.Sleep(pause)
		}
		list, err := ids()
		if err != nil {
			return 0
		}
		for _, tid := range list {
			if b, err := readSyscall(strconv.Itoa(tid)); err == nil && inNanosleep(b) {
				counts[tid]++
			}
		}
	}
	found := 0
	for tid, n := range counts {
		switch {
		case n >= rounds-1 && found == 0:
			found = tid
		case n > 1:
			return 0
		}
	}
	return found
}

// inNanosleep reports whether a /proc/TID/syscall line says the thread is
// blocked in nanosleep: its first field is the system call's number
// ("running" when it runs, -1 outside a system call).
func inNanosleep(line []byte) bool {
	f, _, _ := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
	n, err := strconv.Atoi(string(f))
	return err == nil && n == syscall.SYS_NANOSLEEP
}

func slackPath(tid int) string { return "/proc/" + strconv.Itoa(tid) + "/timerslack_ns" }

func writeSlack(tid int, v []byte) error {
	f, err := os.OpenFile(slackPath(tid), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
