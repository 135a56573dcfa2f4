//go:build linux

package nagle

import (
	"net"
	"syscall"
	"testing"
)

// NoDelay reports whether conn's socket has TCP_NODELAY set (Nagle off).
// Tests of the clients use it to check that Nagle is on while they write
// their first command after a TLS handshake.
func noDelay(t *testing.T, conn *net.TCPConn) bool {
	t.Helper()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v != 0
}

type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

func TestHold(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			var b [1]byte
			c.Read(b[:])
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	if !noDelay(t, tc) {
		t.Fatal("Go's dial should set TCP_NODELAY")
	}
	release := Hold(wrapped{wrapped{c}}) // found through the wrappers
	if noDelay(t, tc) {
		t.Fatal("Nagle is not on after Hold")
	}
	release()
	if !noDelay(t, tc) {
		t.Fatal("TCP_NODELAY is not restored by release")
	}
	release() // twice is harmless
	if !noDelay(t, tc) {
		t.Fatal("a second release changed the socket")
	}
}

func TestHoldWithoutTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	Hold(a)() // no socket: nothing to do, no panic
	Hold(wrapped{nil})()
}
