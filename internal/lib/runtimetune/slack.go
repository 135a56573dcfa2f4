package runtimetune

import "time"

// Sysmon's timer slack while the process is quiet.
//
// Why: with schedtrace set (Apply), the runtime's sysmon thread wakes
// every 10 ms whatever the process does: 100 wake-ups a second. On a
// guest whose every sleep and wake is dear (a PVM guest: 30-50 µs of CPU
// each) that is 5-10% of an IMAP generator's CPU at Dovecot's pace
// (docs/performance.md, "Issue 37, twenty-sixth round"). The runtime's
// 10 ms is a constant; the kernel's timer slack of sysmon's thread is
// not: with a slack of S, each of sysmon's sleeps ends between 10 ms and
// 10 ms + S, earlier only when the kernel lets the timer ride on another
// wake-up of the CPU. With 50 ms, sysmon woke 17 times a second instead
// of 100 under an IMAP generator's load.
//
// The slack delays what sysmon does: taking a P back from a goroutine
// blocked in a system call, preempting a goroutine that has run 10 ms,
// polling the network when every P is busy. So it is given only while
// the process is quiet: one P, under half of it busy, and no goroutine
// waiting over a millisecond to run (the cores' growth threshold, here
// from a single wait), for a second. The first interval that is not
// quiet takes it away again: a goroutine that sysmon kept waiting shows
// in the runtime's waits to run. Only a process allowed to set another
// thread's slack (CAP_SYS_NICE, as root) can; any other runs as before.
const (
	sysmonSlack         = 50 * time.Millisecond // the slack while quiet
	slackBusy           = 0.5                   // of one P: quiet below this
	slackQuietIntervals = 10                    // quiet intervals in a row before the slack goes on
)

// slackControl sets and takes away sysmon's slack. Sweep resets the slack
// of threads sysmon started while it had its own: a thread inherits its
// creator's slack, and any other thread's timers would be late by it.
type slackControl interface {
	Set(on bool)
	Sweep()
}

// nextSlack returns whether sysmon's slack is on in the next interval,
// given whether it was, the cur Ps the sample s was taken on, and the
// count of quiet intervals in a row. It doesn't perform I/O.
func nextSlack(on bool, cur int, s coreSample, quiet int) (next bool, quietAfter int) {
	if s.wall <= 0 {
		return on, quiet
	}
	busy := s.cpu.Seconds() / s.wall.Seconds()
	// Any wait counts, not only minWaits of them as for the cores: at a
	// low rate an interval has few. Over a millisecond (growWait), not
	// shrinkWait: on one P goroutines readied together wait for each
	// other's few hundred µs, which the slack does not change; what it
	// can delay, sysmon's preemption and retake, makes waits of 10 ms.
	waited := s.waits > 0 && s.p99Wait > growWait
	if cur != 1 || busy >= slackBusy || waited {
		return false, 0
	}
	quiet = min(quiet+1, slackQuietIntervals)
	return on || quiet >= slackQuietIntervals, quiet
}
