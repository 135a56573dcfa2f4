package main

import (
	"fmt"
	"runtime/metrics"
)

// gcUse is the runtime's own account of the target's collector: the cycles
// it completed, and the CPU its marking took in all and in assists.
//
// Why: the demo target's live heap is its mailboxes (about 0.6-1.2 GB in
// bench/rate's 5,000,000 sessions/hour run), and a cycle over it lasts
// 0.2-0.9 s. While it marks, the target's goroutines that allocate are made
// to mark too (assists): the part of a cycle its clients see as slower
// replies. bench/rate prints these beside the run's over-time table, so
// that a spike there can be told to be the target's collector, not the
// generator (docs/performance.md, "Issue 37, thirtieth round").
type gcUse struct {
	cycles uint64
	cpu    float64 // seconds, the runtime's estimate (/cpu/classes/gc/total)
	assist float64 // seconds, the runtime's estimate (/cpu/classes/gc/mark/assist)
}

// gcMetrics are the runtime/metrics names readGC reads, in gcUse's order.
var gcMetrics = []string{
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
}

// readGC reads the process's GC account so far. It doesn't perform I/O
// and doesn't stop the world; a metric this runtime lacks reads as 0.
func readGC() gcUse {
	s := make([]metrics.Sample, len(gcMetrics))
	for i, name := range gcMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	var u gcUse
	if s[0].Value.Kind() == metrics.KindUint64 {
		u.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		u.cpu = s[1].Value.Float64()
	}
	if s[2].Value.Kind() == metrics.KindFloat64 {
		u.assist = s[2].Value.Float64()
	}
	return u
}

// since is what the collector did between an earlier reading and u.
func (u gcUse) since(earlier gcUse) gcUse {
	return gcUse{cycles: u.cycles - earlier.cycles, cpu: u.cpu - earlier.cpu, assist: u.assist - earlier.assist}
}

// String is the account as the target's last line gives it; the CPU figures
// are labelled as the runtime's estimates (they count a mark worker's
// whole time slice, so they are not comparable with getrusage's).
func (u gcUse) String() string {
	return fmt.Sprintf("gc %d cycles, %.3f s of CPU, %.3f s of it assists (runtime estimates)", u.cycles, u.cpu, u.assist)
}
