package testutil

import (
	"crypto/tls"
	"net"
)

// NagleListener wraps ln so that every accepted TCP connection has Nagle's
// algorithm on, as C servers' sockets have by default (Go's have
// TCP_NODELAY), and, with split, writes each Write in two: its first byte,
// then the rest. With Nagle on, the rest waits until the client has
// acknowledged the first byte: the way Postfix (OpenSSL) writes its two TLS
// 1.3 session tickets after the client's Finished. A client that delays
// that ACK (Linux: 40 ms at least, when it has nothing to send) stalls
// itself; tests of the clients use it to show that they never do.
func NagleListener(ln net.Listener, split bool) net.Listener {
	return &nagleListener{Listener: ln, split: split}
}

type nagleListener struct {
	net.Listener
	split bool
}

func (l *nagleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	_ = tc.SetNoDelay(false)
	if !l.split {
		return tc, nil
	}
	return &splitConn{TCPConn: tc}, nil
}

// splitConn writes each Write as two writes.
type splitConn struct{ *net.TCPConn }

func (c *splitConn) Write(p []byte) (int, error) {
	if len(p) < 2 {
		return c.TCPConn.Write(p)
	}
	n, err := c.TCPConn.Write(p[:1])
	if err != nil {
		return n, err
	}
	m, err := c.TCPConn.Write(p[1:])
	return n + m, err
}

// NetConn returns the TCP connection.
func (c *splitConn) NetConn() net.Conn { return c.TCPConn }

// TLSBehaviour is one way a server behaves over TCP and TLS around its
// handshake, for the clients' first-exchange tests.
type TLSBehaviour struct {
	Name  string
	Nagle bool // the server's sockets have Nagle on
	Split bool // and write each Write in two (NagleListener)
	// Server changes the server's TLS config (nil: Go's defaults, TLS 1.3,
	// one session ticket sent with the server's flight).
	Server func(*tls.Config)
	// Resume: the client keeps a session cache, and the connects measured
	// are the ones after the first, which resume.
	Resume bool
}

// Listener wraps ln as the behaviour's sockets are.
func (b TLSBehaviour) Listener(ln net.Listener) net.Listener {
	if !b.Nagle {
		return ln
	}
	return NagleListener(ln, b.Split)
}

// TLSBehaviours are the server behaviours a client's connect must meet
// without a stall of its own making (docs/tls.md, "The 40 ms after the
// handshake").
func TLSBehaviours() []TLSBehaviour {
	return []TLSBehaviour{
		{Name: "TLS 1.3, writes split with Nagle on (Postfix's two tickets)", Nagle: true, Split: true},
		{Name: "TLS 1.3, no session tickets, Nagle on", Nagle: true,
			Server: func(c *tls.Config) { c.SessionTicketsDisabled = true }},
		{Name: "TLS 1.3, one ticket (Go)"},
		{Name: "TLS 1.2, writes split with Nagle on", Nagle: true, Split: true,
			Server: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }},
		{Name: "TLS 1.3 resumed, writes split with Nagle on", Nagle: true, Split: true, Resume: true},
		{Name: "TLS 1.3 HelloRetryRequest (P-256 only, Cyrus), writes split with Nagle on", Nagle: true, Split: true,
			Server: func(c *tls.Config) { c.CurvePreferences = []tls.CurveID{tls.CurveP256} }},
	}
}
