package smtpclient

import (
	"context"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpsink"
)

// BenchmarkSubmitToSink is one submission on a fresh connection to an
// smtpsink on 127.0.0.1: Connect (banner, EHLO), Send of a 4 KiB generated
// message to one recipient, Quit. The sink runs in the same process, so
// ns/op and allocs/op include its share.
func BenchmarkSubmitToSink(b *testing.B) {
	sink, gen := startBenchSink(b)
	const from, to = "user1@example.test", "someone@remote.test"
	cfg := Config{Address: sink.Addr().String(), Timeout: 5 * time.Second, Observer: measure.Discard}
	env := message.Envelope{From: from, To: []string{to}, Subject: "benchmark", Sent: time.Now()}
	var seq uint64
	start := sink.Counts().Messages

	b.ReportAllocs()
	for b.Loop() {
		seq++
		env.ID = delivery.NewID(1, seq)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := Connect(ctx, cfg)
		if err != nil {
			cancel()
			b.Fatalf("Connect: %v", err)
		}
		res, err := c.Send(ctx, from, []string{to}, gen.Source(env, 4<<10, seq))
		if err != nil || len(res.Accepted) != 1 {
			c.Close()
			cancel()
			b.Fatalf("Send = %+v, %v; want 1 accepted recipient", res, err)
		}
		if err := c.Quit(ctx); err != nil {
			cancel()
			b.Fatalf("Quit: %v", err)
		}
		cancel()
	}
	b.StopTimer()
	if got := sink.Counts().Messages - start; got != int64(seq) {
		b.Fatalf("sink accepted %d messages, want %d", got, seq)
	}
}

// BenchmarkSendKeep is one Send of a 4 KiB generated message on a kept
// connection to an smtpsink on 127.0.0.1 (bench/submit's keep mode: MAIL,
// RCPT, DATA and the message, in turn). The sink runs in the same process,
// so ns/op and allocs/op include its share; a memory profile tells the
// client's own (go test -bench SendKeep -memprofile).
func BenchmarkSendKeep(b *testing.B) {
	sink, gen := startBenchSink(b)
	const from, to = "user1@example.test", "someone@remote.test"
	cfg := Config{Address: sink.Addr().String(), Timeout: 5 * time.Second, Observer: measure.Discard}
	env := message.Envelope{From: from, To: []string{to}, Subject: "benchmark", Sent: time.Now()}
	ctx := context.Background()
	c, err := Connect(ctx, cfg)
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	rcpts := []string{to}
	var seq uint64
	start := sink.Counts().Messages

	b.ReportAllocs()
	for b.Loop() {
		seq++
		env.ID = delivery.NewID(1, seq)
		res, err := c.Send(ctx, from, rcpts, gen.Source(env, 4<<10, seq))
		if err != nil || len(res.Accepted) != 1 {
			b.Fatalf("Send = %+v, %v; want 1 accepted recipient", res, err)
		}
	}
	b.StopTimer()
	if err := c.Quit(ctx); err != nil {
		b.Fatalf("Quit: %v", err)
	}
	if got := sink.Counts().Messages - start; got != int64(seq) {
		b.Fatalf("sink accepted %d messages, want %d", got, seq)
	}
}

// startBenchSink starts an smtpsink on 127.0.0.1, stopped when b ends, and
// a generator of 4 KiB messages.
func startBenchSink(b *testing.B) (*smtpsink.Sink, *message.Generator) {
	sink, err := smtpsink.New(smtpsink.Options{Addr: "127.0.0.1:0", ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := sink.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		sink.Close()
		if err := sink.Wait(); err != nil {
			b.Errorf("sink: %v", err)
		}
	})
	gen, err := message.NewGenerator(1, []int{4 << 10})
	if err != nil {
		b.Fatal(err)
	}
	return sink, gen
}
