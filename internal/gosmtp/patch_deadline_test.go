package smtp

// Test of mailbench's caller-deadline.patch: with CommandTimeout and
// SubmissionTimeout zero the client sets no deadline of its own (the
// caller's stands); with them set, it sets and clears one around every
// command, as upstream does.

import (
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// deadlineConn is a scriptConn that counts SetDeadline calls and remembers
// the last deadline set.
type deadlineConn struct {
	scriptConn
	mu    sync.Mutex
	calls int
	last  time.Time
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.last = t
	return nil
}

// transaction greets, says EHLO and sends one message through a client
// with timeout as both timeouts; it returns the SetDeadline calls made.
func transaction(t *testing.T, timeout time.Duration, pipelined bool) int {
	t.Helper()
	ehlo := "250-x\r\n250 SIZE\r\n"
	if pipelined {
		ehlo = "250-x\r\n250 PIPELINING\r\n"
	}
	conn := &deadlineConn{scriptConn: scriptConn{replies: strings.NewReader("220 hi\r\n" + ehlo + "250 ok\r\n250 ok\r\n354 go\r\n250 queued\r\n")}}
	c := NewClient(conn)
	c.CommandTimeout, c.SubmissionTimeout = timeout, timeout
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	_, w, err := c.MailRcptData("a@x.test", nil, []string{"b@x.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("Subject: x\r\n\r\nbody\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseWithResponse(); err != nil {
		t.Fatal(err)
	}
	if timeout > 0 && !conn.last.IsZero() {
		t.Errorf("timeout %v: the last deadline set was %v, want it cleared", timeout, conn.last)
	}
	return conn.calls
}

func TestPatchCallerDeadline(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		if n := transaction(t, 0, pipelined); n != 0 {
			t.Errorf("pipelined %v, zero timeouts: %d SetDeadline calls, want none", pipelined, n)
		}
		if n := transaction(t, time.Minute, pipelined); n < 8 {
			t.Errorf("pipelined %v, timeouts set: %d SetDeadline calls, want a set and a clear per exchange (at least 8)", pipelined, n)
		}
	}
}

// TestPatchCallerDeadlineStands: with zero timeouts, a deadline the caller
// set on the connection bounds a command to a silent server.
func TestPatchCallerDeadlineStands(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go func() {
		server.Write([]byte("220 hi\r\n"))
		buf := make([]byte, 512)
		server.Read(buf) // EHLO, never answered
		time.Sleep(5 * time.Second)
	}()
	c := NewClient(client)
	c.CommandTimeout, c.SubmissionTimeout = 0, 0
	client.SetDeadline(time.Now().Add(200 * time.Millisecond))
	start := time.Now()
	err := c.Hello("client.test")
	// Upstream, a zero timeout was a deadline of now: an instant failure.
	if d := time.Since(start); !errors.Is(err, os.ErrDeadlineExceeded) || d < 150*time.Millisecond || d > 2*time.Second {
		t.Errorf("Hello to a silent server: %v after %v, want the caller's deadline (200ms)", err, d)
	}
}
