package smtpclient

import (
	"net"
	"sync"
	"time"
)

// limitConn is the TCP connection as every layer above (TLS, go-smtp) sees
// it. Every deadline set through it is clamped to the current operation's
// deadline, and a cleared deadline becomes that deadline, so go-smtp's habit
// of clearing deadlines between commands cannot leave an unbounded read or
// write. It is safe for concurrent use.
type limitConn struct {
	net.Conn
	mu    sync.Mutex
	limit time.Time // zero: no operation in progress, no clamp
}

func (c *limitConn) clamp(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit.IsZero() || (!t.IsZero() && t.Before(c.limit)) {
		return t
	}
	return c.limit
}

// setLimit sets the operation deadline (zero lifts it) and applies it.
func (c *limitConn) setLimit(t time.Time) {
	c.mu.Lock()
	c.limit = t
	c.mu.Unlock()
	_ = c.Conn.SetDeadline(t)
}

func (c *limitConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *limitConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *limitConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

// replayConn returns prefix to the first reads, then reads from Conn. It
// hands go-smtp the banner this package already read (and, for plain
// connections, anything the server sent after it).
type replayConn struct {
	net.Conn
	prefix []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
