package demo

import (
	"bytes"
	"testing"
	"time"
)

// BenchmarkRelay measures the relay alone: b.N messages of 4 KiB queued
// straight into the relayer (no submission), delivered by its default
// workers to an in-process relay host while the queue is kept full.
// msg/s is its throughput, ns/op the wall time per message.
func BenchmarkRelay(b *testing.B) {
	benchmarkRelay(b, nil)
}

// BenchmarkRelayBusyHost is BenchmarkRelay with a relay host that is slow
// to wake: each read of its sessions waits 500 µs first, as a session
// behind thousands of others on a busy host. There the round trips per
// message, not the CPU, bound the relay (pipelining, pipeline.patch).
func BenchmarkRelayBusyHost(b *testing.B) {
	benchmarkRelay(b, func(rs *relayServer) { rs.wakeDelay = 500 * time.Microsecond })
}

func benchmarkRelay(b *testing.B, configure func(*relayServer)) {
	rs := newRelayServer(b, configure)
	tg := startTarget(b, Options{RelayAddr: rs.addr, OpTimeout: testTimeout})
	msg := append(testMessage("bench"), bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\r\n"), 62)...)
	b.ReportAllocs()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		job := &relayJob{from: "s@client.test", rcpts: []string{"bob@remote.test"}, msg: msg}
		for !tg.relay.tryEnqueue(job) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	for tg.Stats().Queue != 0 {
		time.Sleep(100 * time.Microsecond)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
	if s := tg.Stats(); s.Relayed != int64(b.N) {
		b.Fatalf("Stats() = %+v, want %d relayed", s, b.N)
	}
}
