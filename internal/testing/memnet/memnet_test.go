package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

func dialPair(t *testing.T, n *Network) (client, server net.Conn) {
	t.Helper()
	ln, err := n.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	client, err = n.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return client, <-accepted
}

// Both ends may write before either reads: writes are buffered.
func TestWritesDoNotWaitForTheReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := dialPair(t, New())
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write([]byte("world")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if n, err := s.Read(buf); err != nil || string(buf[:n]) != "hello" {
			t.Errorf("server read %q, %v", buf[:n], err)
		}
		if n, err := c.Read(buf); err != nil || string(buf[:n]) != "world" {
			t.Errorf("client read %q, %v", buf[:n], err)
		}
	})
}

// A read past its deadline fails with a timeout at the deadline, on the
// fake clock.
func TestReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := dialPair(t, New())
		start := time.Now()
		c.SetReadDeadline(start.Add(3 * time.Second))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read() = %v, want a timeout", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("timed out after %v, want 3s", d)
		}
	})
}

// Closing one end: the peer reads what was written, then EOF; the closed
// end's own reads fail; a waiting reader is woken.
func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := dialPair(t, New())
		c.Write([]byte("bye"))
		c.Close()
		b, err := io.ReadAll(s)
		if err != nil || string(b) != "bye" {
			t.Errorf("peer read %q, %v", b, err)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("read on the closed end: %v", err)
		}
		if _, err := s.Write([]byte("x")); err == nil {
			t.Error("write to a closed peer succeeded")
		}

		c2, s2 := dialPair(t, New())
		done := make(chan error, 1)
		go func() { _, err := s2.Read(make([]byte, 1)); done <- err }()
		synctest.Wait()
		s2.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked read after Close: %v", err)
		}
		c2.Close()
	})
}

// Dialing an address nobody listens on is refused at once; a closed
// listener frees its address.
func TestDialRefused(t *testing.T) {
	n := New()
	if _, err := n.DialContext(context.Background(), "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("dial to nothing succeeded")
	}
	ln, err := n.Listen(context.Background(), "tcp", "127.0.0.1:25")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Listen(context.Background(), "tcp", "127.0.0.1:25"); err == nil {
		t.Error("second listener on the same address")
	}
	ln.Close()
	if _, err := n.DialContext(context.Background(), "tcp", "127.0.0.1:25"); err == nil {
		t.Error("dial to a closed listener succeeded")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a closed listener: %v", err)
	}
}
