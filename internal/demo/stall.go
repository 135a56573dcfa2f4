package demo

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// stallGate is a switch that, while on, holds back I/O on every connection
// that consults it. It is safe for concurrent use and doesn't perform I/O.
type stallGate struct {
	mu      sync.Mutex
	stalled bool
	resume  chan struct{} // closed when the current stall ends; nil when not stalled
}

// set turns the stall on or off. Turning it off releases every waiter.
func (g *stallGate) set(stalled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case stalled && !g.stalled:
		g.stalled = true
		g.resume = make(chan struct{})
	case !stalled && g.stalled:
		g.stalled = false
		close(g.resume)
		g.resume = nil
	}
}

// wait returns nil at once when the gate is open. Otherwise it blocks until
// the gate opens (nil), closed is closed (net.ErrClosed) or the deadline, if
// not zero, passes (os.ErrDeadlineExceeded).
func (g *stallGate) wait(closed <-chan struct{}, deadline time.Time) error {
	g.mu.Lock()
	resume := g.resume
	g.mu.Unlock()
	if resume == nil {
		return nil
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-resume:
		return nil
	case <-closed:
		return net.ErrClosed
	case <-expired:
		return os.ErrDeadlineExceeded
	}
}

// stallListener wraps every accepted connection in a stallConn, and keeps
// the open ones: go-imap's server registers a connection only once its
// goroutine runs, so a Close that comes between Accept and then would leave
// it open. closeAll closes them whatever the server knew.
type stallListener struct {
	net.Listener
	gate *stallGate

	mu     sync.Mutex
	open   map[*stallConn]struct{}
	closed bool
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := newStallConn(c, l.gate)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		sc.Close()
		return nil, net.ErrClosed
	}
	if l.open == nil {
		l.open = map[*stallConn]struct{}{}
	}
	l.open[sc] = struct{}{}
	sc.onClose = func() {
		l.mu.Lock()
		delete(l.open, sc)
		l.mu.Unlock()
	}
	return sc, nil
}

// closeAll closes the listener and every connection it accepted that is
// still open; later accepts fail.
func (l *stallListener) closeAll() {
	l.mu.Lock()
	l.closed = true
	conns := make([]*stallConn, 0, len(l.open))
	for c := range l.open {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	l.Listener.Close()
	for _, c := range conns {
		c.Close()
	}
}

// stallConn is a net.Conn whose reads and writes hold back while its gate is
// stalled: the peer sees a server that stops answering. A held-back call
// returns when the stall ends, when the conn is closed, or when the call's
// deadline passes, like a blocked socket call would.
type stallConn struct {
	net.Conn
	gate *stallGate

	closeOnce sync.Once
	closed    chan struct{}
	onClose   func()      // set by the listener; runs once, on Close
	broken    atomic.Bool // a write failed: the connection is closed, writes are discarded

	mu            sync.Mutex
	readDeadline  time.Time
	writeDeadline time.Time
}

func newStallConn(c net.Conn, gate *stallGate) *stallConn {
	return &stallConn{Conn: c, gate: gate, closed: make(chan struct{})}
}

func (c *stallConn) deadlines() (read, write time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readDeadline, c.writeDeadline
}

// Read waits out a stall both before reading (so nothing is consumed while
// stalled) and after (so a command that arrived during a stall that began
// while the read was pending is not answered until the stall ends).
func (c *stallConn) Read(p []byte) (int, error) {
	rd, _ := c.deadlines()
	if err := c.gate.wait(c.closed, rd); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		rd, _ = c.deadlines()
		if werr := c.gate.wait(c.closed, rd); werr != nil {
			return 0, werr
		}
	}
	return n, err
}

// Write passes p on. A write the connection fails (the client went away,
// or did not read until the deadline) closes the connection and reports
// success, and so do later writes: go-imap's imapserver leaks the
// connection's write lock when a FETCH response fails halfway
// (imapmemserver returns without closing the message writer), after which
// the connection's goroutine would block forever on its next response —
// a session that never ends (Target.Active) and, inside a testing/synctest
// bubble, a clock that never moves again. Closed, the connection's next
// read fails and imapserver ends the session.
func (c *stallConn) Write(p []byte) (int, error) {
	if c.broken.Load() {
		return len(p), nil
	}
	_, wd := c.deadlines()
	if err := c.gate.wait(c.closed, wd); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if err != nil {
		c.broken.Store(true)
		_ = c.Conn.Close()
		return len(p), nil
	}
	return n, nil
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.onClose != nil {
			c.onClose()
		}
	})
	return c.Conn.Close()
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline, c.writeDeadline = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDeadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}
