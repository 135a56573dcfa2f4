// Package nagle turns Nagle's algorithm on for a client's TCP connection
// for the first exchange after its TLS handshake, the way the sockets of
// common OpenSSL-based clients are (Python's smtplib, openssl s_client:
// Nagle is on by default), and Go's are not (net.Dial sets TCP_NODELAY).
//
// Why: a TLS 1.3 server that sends its session tickets after the client's
// Finished, in more than one write and with Nagle on (Postfix, through
// OpenSSL: two tickets), holds the second write until the first is
// acknowledged. A client with TCP_NODELAY has already sent its first
// command (EHLO) right behind its Finished, so it has nothing to send
// when the first ticket arrives, and Linux delays that ACK by 40 ms: the
// server's reply to the command waits 40 ms behind the held ticket
// (docs/tls.md, "The 40 ms after the handshake"). With Nagle on, the
// client's command waits for the server's ACK of the Finished, which
// comes with the first ticket; the command then carries the ACK the
// server is waiting for, and nothing stalls. Once the first exchange is
// done, TCP_NODELAY is restored: the rest of the session is
// request-response and gains nothing from Nagle.
//
// Only after a full handshake: after a resumed one, Postfix (OpenSSL, one
// ticket) sends nothing on the client's Finished until the first command
// comes, so a command held by Nagle waits for the server's delayed ACK of
// the Finished, 40 ms. OpenSSL-based clients stall there (Python's, 42-45
// ms); mailbench keeps TCP_NODELAY and does not.
//
// Not during the handshake: after a HelloRetryRequest (a server that wants
// another key share than Go's first, as Cyrus with its default P-256),
// Go writes its ChangeCipherSpec and its second ClientHello apart, where
// OpenSSL writes them at once; with Nagle on, the second would wait for
// the server's delayed ACK of the first, 40 ms.
package nagle

import (
	"crypto/tls"
	"net"
)

// tcpConn is what Hold needs of a connection: a *net.TCPConn has it.
type tcpConn interface {
	SetNoDelay(noDelay bool) error
}

// unwrapper is a connection that wraps another (tls.Conn and the wrappers
// of smtpclient and imapclient).
type unwrapper interface {
	NetConn() net.Conn
}

// Hold turns Nagle's algorithm on for conn's TCP socket and returns the
// function that turns it off again (TCP_NODELAY, Go's default); release
// is safe to call more than once. On a connection that is no TCP socket
// (net.Pipe in tests), or wraps none, Hold does nothing. It doesn't
// perform I/O other than the socket options.
func Hold(conn net.Conn) (release func()) {
	tc := find(conn)
	if tc == nil || tc.SetNoDelay(false) != nil {
		return func() {}
	}
	done := false
	return func() {
		if !done {
			done = true
			_ = tc.SetNoDelay(true) // the socket may be closed already: nothing to restore
		}
	}
}

func find(conn net.Conn) tcpConn {
	for range 8 { // wrappers are shallow; a loop of them must not hang
		if tc, ok := conn.(tcpConn); ok {
			return tc
		}
		u, ok := conn.(unwrapper)
		if !ok {
			return nil
		}
		conn = u.NetConn()
		if conn == nil {
			return nil
		}
	}
	return nil
}

// AfterHandshake turns Nagle on for the first exchange after tc's
// handshake, made over raw, when that handshake was a full one (see the
// package comment), and returns the function that turns it off again; after
// a resumed handshake it does nothing. It doesn't perform I/O other than
// the socket options.
func AfterHandshake(raw net.Conn, tc *tls.Conn) (release func()) {
	if tc.ConnectionState().DidResume {
		return func() {}
	}
	return Hold(raw)
}
