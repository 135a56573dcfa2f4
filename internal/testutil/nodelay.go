package testutil

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// TCPNoDelay reports whether conn's socket has TCP_NODELAY set (Nagle's
// algorithm off), ok false when it cannot be read.
func TCPNoDelay(conn *net.TCPConn) (noDelay, ok bool) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false, false
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		v, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
	}); err != nil || serr != nil {
		return false, false
	}
	return v != 0, true
}

// NagleConn is a client's TCP connection that records, for every Write,
// whether Nagle's algorithm was on: tests of the clients check that it is
// on for the first exchange after a TLS handshake and off during the
// handshake (package internal/nagle). NetConn returns the TCP connection, so that the clients
// find its socket through it.
type NagleConn struct {
	*net.TCPConn
	mu        sync.Mutex
	writes    []bool // per Write: Nagle on
	handshake []bool // per Write: it begins with a clear-text TLS handshake or ChangeCipherSpec record
}

// Write records Nagle's state and writes p.
func (c *NagleConn) Write(p []byte) (int, error) {
	nd, ok := TCPNoDelay(c.TCPConn)
	c.mu.Lock()
	c.writes = append(c.writes, ok && !nd)
	// Record types 20 (ChangeCipherSpec) and 22 (handshake) with a TLS
	// version after them: what a client writes in the clear during the
	// handshake (a ClientHello, and after a HelloRetryRequest the
	// ChangeCipherSpec and the second ClientHello).
	c.handshake = append(c.handshake, len(p) >= 3 && (p[0] == 20 || p[0] == 22) && p[1] == 3)
	c.mu.Unlock()
	return c.TCPConn.Write(p)
}

// HandshakeWrites counts the writes of clear-text TLS handshake records
// (a ClientHello; after a HelloRetryRequest also a ChangeCipherSpec and a
// second ClientHello: 3), and those of them made with Nagle on. The
// latter must stay 0: a client that writes its ChangeCipherSpec and its
// second ClientHello apart (Go does) would have the second held until the
// server's delayed ACK of the first, 40 ms.
func (c *NagleConn) HandshakeWrites() (total, withNagle int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.handshake {
		if h {
			total++
			if c.writes[i] {
				withNagle++
			}
		}
	}
	return total, withNagle
}

// NetConn returns the TCP connection.
func (c *NagleConn) NetConn() net.Conn { return c.TCPConn }

// Writes returns, per Write so far, whether Nagle was on.
func (c *NagleConn) Writes() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.writes...)
}

// NagleDial returns a DialContext for the clients' configs that dials TCP
// and wraps the connection in a NagleConn, and a function that returns the
// last one dialed (nil before the first).
func NagleDial() (dial func(ctx context.Context, network, address string) (net.Conn, error), last func() *NagleConn) {
	var mu sync.Mutex
	var nc *NagleConn
	dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			c.Close()
			return nil, fmt.Errorf("testutil: %s is not TCP", address)
		}
		mu.Lock()
		defer mu.Unlock()
		nc = &NagleConn{TCPConn: tc}
		return nc, nil
	}
	last = func() *NagleConn {
		mu.Lock()
		defer mu.Unlock()
		return nc
	}
	return dial, last
}
