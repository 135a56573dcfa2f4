package smtpclient

import (
	"context"
	"net"
	"testing"
	"time"
)

// BenchmarkOpWatchdog is what an operation spends on its deadline and
// context (newOp, guard, done) under a cancellable context, as a session's
// operations run, the Client's watchdog kept from one to the next: no I/O.
func BenchmarkOpWatchdog(b *testing.B) {
	// A TCP connection, as the runtime's deadline timers are what the
	// operations set (net.Pipe's deadlines are a different mechanism).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	p, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	conn := &limitConn{Conn: a}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wd watchdog
	defer wd.release()
	b.ReportAllocs()
	for b.Loop() {
		o := newOp(ctx, time.Now(), 30*time.Second)
		o.guard(&wd, conn)
		o.done()
	}
}
