// Package quickack makes a client's TCP socket acknowledge at once what the
// server sends while the connection is being set up (TCP_QUICKACK before
// every read), so that no server behaviour can make mailbench's connect
// wait on its own delayed ACK.
//
// Why: Linux delays an ACK by at least 40 ms when the receiver has nothing
// to send ("pingpong" mode, entered whenever the socket writes soon after
// it read, as a client does all through a handshake). A server that
// writes twice in a row with Nagle's algorithm on (Postfix through
// OpenSSL: its two TLS 1.3 session tickets after the client's Finished,
// then its reply) holds the second write until the first is acknowledged:
// 40 ms on every STARTTLS connect with Go's default TCP_NODELAY and
// nothing else. Turning Nagle on in the client instead (mailbench until
// 0.3, and OpenSSL-based clients by default) trades that stall for
// another: against a server that sends nothing after the handshake (no
// tickets) the client's first command waits for the server's delayed ACK
// of the Finished, 40 ms again. With TCP_NODELAY kept and TCP_QUICKACK set
// before each read, the client writes at once and acknowledges at once,
// whatever the server does: setting the option leaves pingpong mode, and
// the read that empties the socket sends the pending ACK (docs/tls.md,
// "The 40 ms after the handshake").
//
// The option does not stay set (the kernel goes back to delayed ACKs on its
// own), hence a setsockopt before every read; only while active (from Wrap
// until Done), that is during a connect (a handful of reads), not for the
// rest of a session.
package quickack

import (
	"net"
	"sync/atomic"
	"syscall"
)

// Conn is a client connection that sets TCP_QUICKACK on its TCP socket
// before each Read while it is active. It is active from Wrap until Done.
// Reads and Done may run concurrently.
type Conn struct {
	net.Conn
	rc     syscall.RawConn // nil when no TCP socket was found
	active atomic.Bool
}

// unwrapper is a connection that wraps another (tls.Conn, the clients' own
// wrappers, test wrappers).
type unwrapper interface {
	NetConn() net.Conn
}

// Wrap returns conn wrapped, active. On a connection with no TCP socket
// under it (net.Pipe in tests), or on a system without TCP_QUICKACK, the
// wrapper only passes reads through. It doesn't perform I/O.
func Wrap(conn net.Conn) *Conn {
	c := &Conn{Conn: conn, rc: rawConn(conn)}
	c.active.Store(c.rc != nil && supported)
	return c
}

// Read sets TCP_QUICKACK, while active, then reads.
func (c *Conn) Read(p []byte) (int, error) {
	if c.active.Load() {
		_ = c.rc.Control(setQuickAck) // a closed socket: the read reports it
	}
	return c.Conn.Read(p)
}

// Done ends the active period: later reads are plain reads.
func (c *Conn) Done() { c.active.Store(false) }

// NetConn returns the wrapped connection.
func (c *Conn) NetConn() net.Conn { return c.Conn }

func rawConn(conn net.Conn) syscall.RawConn {
	for range 8 { // wrappers are shallow; a loop of them must not hang
		if sc, ok := conn.(interface {
			SyscallConn() (syscall.RawConn, error)
		}); ok {
			if _, tcp := conn.(*net.TCPConn); tcp {
				rc, err := sc.SyscallConn()
				if err != nil {
					return nil
				}
				return rc
			}
		}
		u, ok := conn.(unwrapper)
		if !ok {
			return nil
		}
		if conn = u.NetConn(); conn == nil {
			return nil
		}
	}
	return nil
}
