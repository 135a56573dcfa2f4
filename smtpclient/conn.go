package smtpclient

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"time"
)

// limitConn is the TCP connection as every layer above (TLS, go-smtp) sees
// it. Every deadline set through it is clamped to the current operation's
// deadline, and a cleared deadline becomes that deadline, so go-smtp's habit
// of clearing deadlines between commands cannot leave an unbounded read or
// write. It is safe for concurrent use.
//
// A deadline equal to the one in force is not set again: go-smtp sets and
// clears one around every command, each of which clamps to the operation's
// deadline, so an operation arms its deadline once (setLimit) instead of
// twice per command, each a trip through the runtime's timers.
type limitConn struct {
	net.Conn
	mu      sync.Mutex
	limit   time.Time // zero: no operation in progress, no clamp
	applied time.Time // the read and write deadline in force
	split   bool      // a read or write deadline was set apart: applied is unknown
}

func (c *limitConn) clamp(t time.Time) time.Time {
	if c.limit.IsZero() || (!t.IsZero() && t.Before(c.limit)) {
		return t
	}
	return c.limit
}

// setLimit sets the operation deadline (zero lifts it) and applies it.
func (c *limitConn) setLimit(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = t
	c.apply(t)
}

// endLimit lifts the clamp without touching the deadline in force: no
// read or write happens between operations, and the next operation's
// setLimit replaces it (one SetDeadline an operation instead of two, each
// a trip through the runtime's timers).
func (c *limitConn) endLimit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = time.Time{}
}

// apply sets t as the read and write deadline unless it is in force.
// c.mu is held.
func (c *limitConn) apply(t time.Time) error {
	if !c.split && t.Equal(c.applied) {
		return nil
	}
	err := c.Conn.SetDeadline(t)
	if err == nil {
		c.applied, c.split = t, false
	}
	return err
}

func (c *limitConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apply(c.clamp(t))
}

func (c *limitConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.split = true
	return c.Conn.SetReadDeadline(c.clamp(t))
}

func (c *limitConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.split = true
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

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

// DefaultMaxReplyBytes bounds one server reply (Config.MaxReplyBytes): its
// longest line and all the lines of a multi-line reply together. RFC 5321
// (4.5.3.1.5) limits a reply line to 512 bytes; the longest replies real
// servers send, EHLO's extension lists, are under 1 KiB.
const DefaultMaxReplyBytes = 64 << 10

// errReplyTooLong is replyLimitConn's error once a reply passes its bound.
type errReplyTooLong struct{ limit int }

func (e *errReplyTooLong) Error() string {
	return fmt.Sprintf("a reply longer than %d bytes", e.limit)
}

// replyLimitConn bounds what a server's replies can make the reader above
// it (textproto, go-smtp) hold: a line, or a run of continuation lines
// ("250-..."), longer than limit bytes ends the reads with errReplyTooLong
// from then on. It looks at the bytes as they pass and copies none.
// Without it, a server that sends an endless banner or EHLO line grows the
// reader's buffer by gigabytes within one operation's deadline.
type replyLimitConn struct {
	net.Conn
	limit   int
	line    int     // bytes of the current line so far
	reply   int     // bytes of the continuation lines before it
	head    [4]byte // the current line's first bytes ("250-")
	headLen int
	err     error
}

func newReplyLimitConn(c net.Conn, limit int) net.Conn {
	if limit <= 0 {
		return c
	}
	return &replyLimitConn{Conn: c, limit: limit}
}

func (c *replyLimitConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	for b := p[:n]; len(b) > 0; {
		for c.headLen < len(c.head) && len(b) > 0 && b[0] != '\n' {
			c.head[c.headLen] = b[0]
			c.headLen++
			c.line++
			b = b[1:]
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.line += len(b)
			b = nil
		} else {
			c.line += i + 1
			b = b[i+1:]
		}
		if c.reply+c.line > c.limit {
			c.err = &errReplyTooLong{limit: c.limit}
			return 0, c.err
		}
		if i >= 0 {
			if c.headLen == len(c.head) && c.head[3] == '-' {
				c.reply += c.line
			} else {
				c.reply = 0
			}
			c.line, c.headLen = 0, 0
		}
	}
	return n, err
}
