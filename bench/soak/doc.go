// Package soak holds mailbench's memory measurements: TestMemoryConstants
// measures the figures behind workload's memory estimate (bytes per open
// session, per user, per message held by the embedded target) and
// BenchmarkSoak runs the embedded target at a fixed rate for a while,
// sampling heap and RSS, and checks that memory stays flat. Both are
// described in docs/performance.md. The package has no code of its own.
package soak
