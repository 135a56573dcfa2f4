//go:build linux

package smtpsink

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestNoKeepAliveOnAcceptedConnections: the sink's own listener accepts
// connections without TCP keep-alive (see Sink.listen).
func TestNoKeepAliveOnAcceptedConnections(t *testing.T) {
	s := startSink(t, Options{})
	c := dialRaw(t, s.Addr().String())
	if code, _ := c.reply(); code != 220 {
		t.Fatalf("banner %d", code)
	}
	var tc *trackedConn
	deadline := time.Now().Add(ioTimeout)
	for tc == nil && time.Now().Before(deadline) {
		s.ln.mu.Lock()
		for c := range s.ln.conns {
			tc = c
		}
		s.ln.mu.Unlock()
	}
	if tc == nil {
		t.Fatal("no tracked connection")
	}
	raw, err := tc.Conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var on, nodelay int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		on, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		if serr == nil {
			nodelay, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	if on != 0 {
		t.Errorf("SO_KEEPALIVE = %d on an accepted connection, want 0", on)
	}
	if nodelay == 0 {
		t.Errorf("TCP_NODELAY off; Go sets it on every TCP connection")
	}
}
