package imapclient

import (
	"bytes"
	"net"
	"strings"
	"sync"
)

// maxGreeting bounds the greeting line kept for Client.Greeting.
const maxGreeting = 1 << 10

// greetingTap passes a connection through, keeping a copy of its first line
// (the server greeting), up to maxGreeting bytes.
type greetingTap struct {
	net.Conn
	mu   sync.Mutex
	line []byte
	done bool
}

// newGreetingTap taps c; when the greeting was already read (STARTTLS
// reads it before the handshake), prefix holds it and c is not tapped.
func newGreetingTap(c net.Conn, prefix []byte) *greetingTap {
	g := &greetingTap{Conn: c}
	if len(prefix) > 0 {
		g.keep(prefix)
		g.done = true
	}
	return g
}

func (g *greetingTap) keep(p []byte) {
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		p, g.done = p[:i+1], true
	}
	if room := maxGreeting - len(g.line); len(p) > room {
		p, g.done = p[:room], true
	}
	g.line = append(g.line, p...)
}

func (g *greetingTap) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	g.mu.Lock()
	if !g.done && n > 0 {
		g.keep(p[:n])
	}
	g.mu.Unlock()
	return n, err
}

func (g *greetingTap) text() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.TrimRight(string(g.line), "\r\n")
}

// Greeting returns the server's greeting line as received ("* OK [CAPABILITY
// IMAP4rev1 ...] Dovecot ready."), without the line break, at most 1 KiB.
// It doesn't perform I/O.
func (c *Client) Greeting() string {
	if c.greeting == nil {
		return ""
	}
	return c.greeting.text()
}
