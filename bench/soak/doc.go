// Package soak holds mailbench's memory measurements: TestMemoryConstants
// measures the figures behind workload's memory estimate (bytes per open
// session, per user, per message held by the embedded target);
// BenchmarkSoak runs a run with the embedded target in process at a fixed
// rate for a while, sampling heap and RSS, and checks that the heap grows
// by no more than the mail the target stores; BenchmarkSoakGenerator runs
// the target in a child process and checks that the generator's own live
// heap stays flat. All are described in docs/performance.md. The package
// has no code of its own.
package soak
