package smtpclient

import (
	"net"
	"testing"
	"time"
)

// deadlineConn records the deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetDeadline(t time.Time) error     { c.set = append(c.set, t); return nil }
func (c *deadlineConn) SetReadDeadline(t time.Time) error { return nil }

// TestLimitConnArmsOnce: an operation's deadline is set on the connection
// once when it begins and lifted once when it ends, however often go-smtp
// sets and clears a deadline around its commands in between; a deadline
// earlier than the operation's still reaches the connection, and after a
// read deadline set apart the next deadline is set again.
func TestLimitConnArmsOnce(t *testing.T) {
	under := &deadlineConn{}
	c := &limitConn{Conn: under}
	limit := time.Now().Add(time.Minute)
	c.setLimit(limit)
	for range 4 { // MAIL, RCPT, DATA, the final reply: set, then clear
		_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
		_ = c.SetDeadline(time.Time{})
	}
	if len(under.set) != 1 || !under.set[0].Equal(limit) {
		t.Fatalf("deadlines set during the operation: %v, want the operation's once", under.set)
	}
	early := time.Now().Add(time.Second)
	_ = c.SetDeadline(early)
	_ = c.SetDeadline(time.Time{})
	if n := len(under.set); n != 3 || !under.set[1].Equal(early) || !under.set[2].Equal(limit) {
		t.Fatalf("an earlier deadline and its clearing: %v", under.set)
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Hour)) // clamped, set apart
	_ = c.SetDeadline(time.Time{})
	if n := len(under.set); n != 4 || !under.set[3].Equal(limit) {
		t.Fatalf("after a read deadline set apart, the next deadline was not set again: %v", under.set)
	}
	c.setLimit(time.Time{})
	if n := len(under.set); n != 5 || !under.set[4].IsZero() {
		t.Fatalf("the end of the operation did not lift the deadline: %v", under.set)
	}
}
