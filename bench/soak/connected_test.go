package soak

import (
	"context"
	"testing"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/run/connected"
)

// BenchmarkConnectedClient measures what one connected client of
// [clients] holds in the generator once it waits in IDLE: 1,000 clients
// against the embedded target in a child process (so that the server's
// side is measured apart, as server-B/client). B/client is what
// workload's memory estimate counts per client.
func BenchmarkConnectedClient(b *testing.B) {
	const n = 1000
	var perClient, perServer float64
	for b.Loop() {
		c := startChild(b, "1000,0,0,0,0")
		cli0, srv0 := live(), c.live(b)
		pop := connected.New(connected.Config{IMAP: imapclient.Config{Address: c.imap, Timeout: 10 * time.Second}, Users: users(n), Seed: 1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { pop.Run(ctx, time.Now()); close(done) }()
		deadline := time.Now().Add(time.Minute)
		for pop.Stats().Connected < n || pop.Stats().Idles < n {
			if time.Now().After(deadline) {
				b.Fatalf("after a minute: %+v", pop.Stats())
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // the reader goroutines park
		cli1, srv1 := live(), c.live(b)
		perClient, perServer = float64(cli1-cli0)/n, float64(srv1-srv0)/n
		cancel()
		<-done
	}
	b.ReportMetric(perClient, "B/client")
	b.ReportMetric(perServer, "server-B/client")
}
