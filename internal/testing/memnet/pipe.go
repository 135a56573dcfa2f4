package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// pipe returns two connected ends. Unlike net.Pipe, writes are buffered
// (as a socket's are), so that protocols where both sides write before
// reading (TLS alerts and tickets, pipelined SMTP) do not deadlock. Reads
// honour deadlines; every wait is on a channel, so goroutines waiting here
// are durably blocked in the sense of testing/synctest.
func pipe(a, b net.Addr) (net.Conn, net.Conn) {
	ab, ba := newBuffer(), newBuffer()
	return &conn{in: ba, out: ab, local: a, remote: b}, &conn{in: ab, out: ba, local: b, remote: a}
}

// buffer is one direction of a pipe.
type buffer struct {
	mu       sync.Mutex
	data     []byte
	eof      bool          // the writer closed: reads end after data
	closed   bool          // the reader closed: reads and writes fail
	changed  chan struct{} // closed and replaced on every change
	deadline time.Time     // read deadline
}

func newBuffer() *buffer { return &buffer{changed: make(chan struct{})} }

// signal wakes every waiter; called with mu held.
func (b *buffer) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

type conn struct {
	in, out       *buffer
	local, remote net.Addr
	closeOnce     sync.Once
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "memnet: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Unwrap() error   { return os.ErrDeadlineExceeded }

func (c *conn) Read(p []byte) (int, error) {
	b := c.in
	for {
		b.mu.Lock()
		switch {
		case b.closed:
			b.mu.Unlock()
			return 0, net.ErrClosed
		case len(b.data) > 0:
			n := copy(p, b.data)
			b.data = b.data[n:]
			if len(b.data) == 0 {
				b.data = nil
			}
			b.mu.Unlock()
			return n, nil
		case b.eof:
			b.mu.Unlock()
			return 0, io.EOF
		case !b.deadline.IsZero() && !time.Now().Before(b.deadline):
			b.mu.Unlock()
			return 0, &net.OpError{Op: "read", Net: "mem", Err: timeoutError{}}
		}
		changed, deadline := b.changed, b.deadline
		b.mu.Unlock()
		if deadline.IsZero() {
			<-changed
			continue
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

func (c *conn) Write(p []byte) (int, error) {
	b := c.out
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.eof {
		return 0, &net.OpError{Op: "write", Net: "mem", Err: net.ErrClosed}
	}
	b.data = append(b.data, p...)
	b.signal()
	return len(p), nil
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.in.mu.Lock()
		c.in.closed = true
		c.in.data = nil
		c.in.signal()
		c.in.mu.Unlock()
		c.out.mu.Lock()
		c.out.eof = true
		c.out.signal()
		c.out.mu.Unlock()
	})
	return nil
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.in.mu.Lock()
	c.in.deadline = t
	c.in.signal()
	c.in.mu.Unlock()
	return nil
}

// SetWriteDeadline has nothing to bound: writes never block.
func (c *conn) SetWriteDeadline(time.Time) error { return nil }
