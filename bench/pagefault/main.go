// Command pagefault measures what a page fault costs on this machine:
// it writes one byte to each 4 KiB page of fresh memory and prints the
// faults, the wall time and the user and system time the process was
// charged. With -huge the memory is first advised MADV_HUGEPAGE (Linux,
// transparent huge pages set to "madvise" or "always").
//
// Why: on paravirtualized guests a fault costs 10 µs or more, about half of
// it charged as user time, so a Go heap that grows while a run is measured
// shows up in the CPU per operation (docs/performance.md, "Issue 37,
// sixteenth round").
//
//	go run ./bench/pagefault -mb 400
//	go run ./bench/pagefault -mb 400 -huge
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// madvHugePage is MADV_HUGEPAGE (linux/mman.h).
const madvHugePage = 14

func main() {
	mb := flag.Int("mb", 400, "MiB of fresh memory to write")
	huge := flag.Bool("huge", false, "advise the memory MADV_HUGEPAGE first")
	flag.Parse()
	n := *mb << 20
	b := make([]byte, n) // a large object: fresh memory, not yet written
	if *huge {
		// Whole 2 MiB pages inside the allocation only.
		const hp = 2 << 20
		lo := (uintptr(unsafe.Pointer(&b[0])) + hp - 1) &^ (hp - 1)
		hi := (uintptr(unsafe.Pointer(&b[0])) + uintptr(n)) &^ (hp - 1)
		if hi > lo {
			if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvHugePage); e != 0 {
				fmt.Fprintln(os.Stderr, "pagefault: madvise:", e)
				os.Exit(1)
			}
		}
	}
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	start := time.Now()
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	faults := r1.Minflt - r0.Minflt
	user := time.Duration(r1.Utime.Nano() - r0.Utime.Nano())
	sys := time.Duration(r1.Stime.Nano() - r0.Stime.Nano())
	per := time.Duration(0)
	if faults > 0 {
		per = wall / time.Duration(faults)
	}
	fmt.Printf("pagefault: %d MiB, huge %v: %d faults, wall %v (%v per fault), user %v, system %v\n",
		*mb, *huge, faults, wall.Round(time.Millisecond), per, user.Round(time.Millisecond), sys.Round(time.Millisecond))
}
