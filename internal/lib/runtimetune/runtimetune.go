// Package runtimetune re-executes the running program once, at start-up,
// with GODEBUG=schedtrace=2147483647, which keeps the Go runtime's sysmon
// thread out of its deep sleep.
//
// Why: a load generator or sink that waits on the network most of the time
// keeps going idle (every P idle). At each idle moment sysmon goes into a
// deep sleep, and the next system call has to wake it (a futex call), after
// which sysmon polls every 20 µs again for a millisecond or more (golang/go
// issue 18236). For a generator that costs more CPU per session than its
// own code does (measurements: docs/performance.md, "The Go runtime's
// sysmon thread"). With schedtrace set, sysmon never deep-sleeps; when there is nothing to do it backs off to one wake-up every
// 10 ms (about 0.02% of a core).
//
// The value is the largest the runtime accepts (about 24.8 days, in ms):
// the runtime prints a "SCHED" line on stderr when that much monotonic time
// has passed since its last line, counting from zero, so on a host up for
// more than 24.8 days one such line appears at start-up (and every 24.8
// days after). Setting schedtrace in GODEBUG yourself, schedtrace=0
// included, turns the re-execution off.
package runtimetune

import (
	"os"
	"runtime"
	"strings"
	"syscall"
)

// Setting is the GODEBUG setting Apply adds.
const Setting = "schedtrace=2147483647"

// Env returns the environment the program should be re-executed with, and
// whether it should be: not when GODEBUG already sets schedtrace (the
// user's choice, or this package's earlier re-execution). It doesn't
// perform I/O.
func Env(environ []string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	godebug := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug = v // the last one counts, as for os.Getenv
			continue
		}
		out = append(out, kv)
	}
	for field := range strings.SplitSeq(godebug, ",") {
		if key, _, _ := strings.Cut(strings.TrimSpace(field), "="); key == "schedtrace" {
			return nil, false
		}
	}
	if godebug == "" {
		godebug = Setting
	} else {
		godebug += "," + Setting
	}
	return append(out, "GODEBUG="+godebug), true
}

// Apply re-executes the program (/proc/self/exe, the same arguments) with
// Env's environment, on Linux, when Env says so. It returns when it does
// not re-execute: another OS, schedtrace already set, or an exec that
// failed (the program then runs on as it is). Call it first in main,
// before any goroutine or file is opened.
func Apply() {
	if runtime.GOOS != "linux" {
		return
	}
	env, ok := Env(os.Environ())
	if !ok {
		return
	}
	_ = syscall.Exec("/proc/self/exe", os.Args, env)
}
