package demo

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// implicitTLSListener makes every accepted connection a TLS server
// connection and starts its handshake at once, bounded by timeout: a peer
// that does not complete it in time is disconnected rather than left
// waiting for a greeting that cannot come. Accept returns the *tls.Conn
// itself, so that the servers see the connection as secure (and offer no
// STARTTLS on it).
type implicitTLSListener struct {
	net.Listener
	config  *tls.Config
	timeout time.Duration
}

func newImplicitTLSListener(ln net.Listener, config *tls.Config, timeout time.Duration) *implicitTLSListener {
	return &implicitTLSListener{Listener: ln, config: config, timeout: timeout}
}

func (l *implicitTLSListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := tls.Server(c, l.config)
	// The server's first read or write waits for this handshake (crypto/tls
	// serializes them) and gets its error. An interrupted handshake closes
	// the connection.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		defer cancel()
		_ = tc.HandshakeContext(ctx)
	}()
	return tc, nil
}
