package smtpsink

import (
	"crypto/tls"
	"io"
	"net"
	"sync"
	"time"
)

// refusalTimeout bounds the whole exchange with a refused connection: the
// TLS handshake for implicit TLS, the 421 reply and the lingering close.
const refusalTimeout = 5 * time.Second

// limitListener counts and tracks the connections it hands out and refuses
// those beyond the sink's MaxConnections with a 421 reply. With implicit TLS
// it wraps each connection in a TLS server (the handshake happens later,
// under go-smtp's deadlines). Safe for concurrent use.
type limitListener struct {
	net.Listener
	s        *Sink
	max      int
	implicit *tls.Config
	refusal  []byte

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newLimitListener(ln net.Listener, s *Sink, implicit *tls.Config) *limitListener {
	return &limitListener{
		Listener: ln,
		s:        s,
		max:      s.opts.MaxConnections,
		implicit: implicit,
		refusal:  []byte("421 4.3.2 " + s.opts.Domain + " Too many connections, try again later\r\n"),
		conns:    make(map[*trackedConn]struct{}),
	}
}

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return nil, net.ErrClosed
		}
		if l.max > 0 && len(l.conns) >= l.max {
			l.mu.Unlock()
			l.s.refused.Add(1)
			go l.refuse(c)
			continue
		}
		tc := &trackedConn{Conn: c, l: l}
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		l.s.connections.Add(1)
		l.s.active.Add(1)
		if l.implicit != nil {
			return tls.Server(tc, l.implicit), nil
		}
		return tc, nil
	}
}

// refuse sends the 421 reply and closes c without resetting it, so that the
// client reads the reply. Bounded by refusalTimeout.
func (l *limitListener) refuse(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refusalTimeout))
	var w net.Conn = c
	if l.implicit != nil {
		tc := tls.Server(c, l.implicit)
		if tc.Handshake() != nil {
			return
		}
		w = tc
	}
	if _, err := w.Write(l.refusal); err != nil {
		return
	}
	if tc, ok := w.(*tls.Conn); ok {
		tc.CloseWrite()
	} else if tcp, ok := c.(*net.TCPConn); ok {
		tcp.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(w, 64<<10)) // until the client closes
}

// closeAll closes every tracked connection and refuses later ones.
func (l *limitListener) closeAll() {
	l.mu.Lock()
	l.closed = true
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (l *limitListener) release(c *trackedConn) {
	l.mu.Lock()
	_, ok := l.conns[c]
	delete(l.conns, c)
	l.mu.Unlock()
	if ok {
		l.s.active.Add(-1)
	}
}

// trackedConn leaves the listener's set when closed.
type trackedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}
