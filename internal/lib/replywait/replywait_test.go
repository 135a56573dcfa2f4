//go:build unix

package replywait

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// peer is a scripted server on loopback: serve runs on its side of the
// one connection it accepts.
func peer(t *testing.T, serve func(net.Conn)) *Conn {
	return peerBuffers(t, 0, serve)
}

// peerBuffers is peer with both socket buffers set to size before the
// connection is made (0: the system's).
func peerBuffers(t *testing.T, size int, serve func(net.Conn)) *Conn {
	t.Helper()
	raw, done := dialServedBuffers(t, size, serve)
	w, ok := Wrap(raw).(*Conn)
	if !ok {
		t.Fatalf("Wrap(%T) did not wrap", raw)
	}
	t.Cleanup(func() { w.Close(); <-done })
	return w
}

// dialServedBuffers dials a loopback listener whose one connection serve
// runs on, both ends' socket buffers set to size (0: the system's), and
// returns the plain connection and a channel closed when serve returns.
func dialServedBuffers(tb testing.TB, size int, serve func(net.Conn)) (net.Conn, <-chan struct{}) {
	tb.Helper()
	setBuffers := func(_, _ string, rc syscall.RawConn) error {
		if size > 0 {
			rc.Control(func(fd uintptr) {
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, size)
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, size)
			})
		}
		return nil
	}
	ln, err := (&net.ListenConfig{Control: setBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	raw, err := (&net.Dialer{Control: setBuffers}).Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		tb.Fatal(err)
	}
	return raw, done
}

// lineServer answers each line it reads with "<n> <line>" after delay,
// numbering from 1; a line "big" is answered with 100 KiB.
func lineServer(delay time.Duration) func(net.Conn) {
	return func(c net.Conn) {
		r := bufio.NewReader(c)
		for n := 1; ; n++ {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			time.Sleep(delay)
			reply := fmt.Sprintf("%d %s", n, line)
			if line == "big\n" {
				reply = fmt.Sprintf("%d %s\n", n, strings.Repeat("b", 100<<10))
			}
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	}
}

// TestHeldUntilRead: a small write reaches the server only when the
// client reads, and the reply to it is read in full.
func TestHeldUntilRead(t *testing.T) {
	got := make(chan string, 2)
	c := peer(t, func(s net.Conn) {
		s.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		buf := make([]byte, 64)
		n, err := s.Read(buf)
		if err == nil {
			got <- "before the read: " + string(buf[:n])
			return
		}
		got <- "nothing"
		s.SetReadDeadline(time.Time{})
		n, err = io.ReadFull(s, buf[:10])
		got <- string(buf[:n])
		if err == nil {
			io.WriteString(s, "ok\n")
		}
	})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	for _, p := range []string{"MAIL ", "FROM:<>\r\n"} {
		if n, err := c.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if g := <-got; g != "nothing" {
		t.Fatalf("the server got %q", g)
	}
	// A read of nothing reads nothing and sends nothing.
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if line != "ok\n" || err != nil {
		t.Fatalf("read %q, %v", line, err)
	}
	if g := <-got; g != "MAIL FROM:" {
		t.Errorf("the server got %q, want the two writes in order", g)
	}
	if c.emptyReads != 0 {
		t.Errorf("%d read system calls found nothing, want 0: the read should wait first", c.emptyReads)
	}
}

// TestRepliesWithoutEmptyReads: request after request, each answered after
// a pause, the reads wait in the poller: no read system call comes back
// empty (a plain net.Conn makes one per reply here).
func TestRepliesWithoutEmptyReads(t *testing.T) {
	c := peer(t, lineServer(200*time.Microsecond))
	r := bufio.NewReader(c)
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(c, "cmd%d\n", i)
		line, err := r.ReadString('\n')
		if want := fmt.Sprintf("%d cmd%d\n", i, i); line != want || err != nil {
			t.Fatalf("reply %d: %q, %v; want %q", i, line, err, want)
		}
	}
	// A wake-up with nothing to read is possible but rare; one per reply
	// is what waiting first removes.
	// The first read of a connection reads first (nothing drained yet).
	if c.waitedFor != 99 {
		t.Errorf("%d of 100 replies read after waiting first, want 99", c.waitedFor)
	}
	if c.emptyReads > 5 {
		t.Errorf("%d of 100 replies began with an empty read", c.emptyReads)
	}
}

// TestSameBytesAsPlain: a random mix of writes (small, over MaxHeld, split
// across calls) and reads gives the same replies through Conn as through a
// plain connection, and the server sees the same bytes.
func TestSameBytesAsPlain(t *testing.T) {
	for seed := range uint64(8) {
		script := randomScript(rand.New(rand.NewPCG(seed, 37)))
		var results [2]string
		for i, wrap := range []bool{false, true} {
			results[i] = runScript(t, script, wrap)
		}
		if results[0] != results[1] {
			t.Errorf("seed %d: plain and held differ:\nplain %.200q\nheld  %.200q", seed, results[0], results[1])
		}
	}
}

// randomScript is a list of requests: each is a line, written in pieces.
func randomScript(rnd *rand.Rand) [][]string {
	var script [][]string
	for range 40 {
		var line string
		switch rnd.IntN(6) {
		case 0:
			line = strings.Repeat("x", MaxHeld+rnd.IntN(3*MaxHeld)) // over the hold
		case 1:
			line = "big" // a reply larger than one read
		default:
			line = strings.Repeat("y", rnd.IntN(200))
		}
		line += "\n"
		var pieces []string
		for len(line) > 0 {
			k := 1 + rnd.IntN(len(line))
			pieces = append(pieces, line[:k])
			line = line[k:]
		}
		script = append(script, pieces)
	}
	return script
}

// dialServed is dialServedBuffers with the system's buffers; the caller
// wraps the connection or not.
func dialServed(tb testing.TB, serve func(net.Conn)) net.Conn {
	tb.Helper()
	c, _ := dialServedBuffers(tb, 0, serve)
	return c
}

func runScript(t *testing.T, script [][]string, wrap bool) string {
	c := dialServed(t, lineServer(0))
	if wrap {
		c = Wrap(c)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var out bytes.Buffer
	r := bufio.NewReaderSize(c, 512) // replies larger than one read
	for _, pieces := range script {
		for _, p := range pieces {
			if _, err := io.WriteString(c, p); err != nil {
				t.Fatal(err)
			}
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%d:%x|", len(line), line[:min(len(line), 8)])
	}
	return out.String()
}

// TestWriteDuringRead: a write made while a read waits in another
// goroutine (IMAP's DONE during IDLE) goes out at once; holding it would
// wait for the read deadline.
func TestWriteDuringRead(t *testing.T) {
	c := peer(t, lineServer(0))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	read := make(chan string)
	go func() {
		line, _ := r.ReadString('\n')
		read <- line
	}()
	// Wait until the reader is in Read.
	for {
		c.mu.Lock()
		reading := c.reading
		c.mu.Unlock()
		if reading {
			break
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	io.WriteString(c, "DONE\n")
	if line := <-read; line != "1 DONE\n" {
		t.Fatalf("read %q", line)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the reply took %v: the write waited", d)
	}
}

// TestCloseSendsHeld: a write followed by Close, with no read, reaches
// the server before the end of the stream.
func TestCloseSendsHeld(t *testing.T) {
	got := make(chan string, 1)
	c := peer(t, func(s net.Conn) {
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(s)
		got <- fmt.Sprintf("%q %v", b, err)
	})
	io.WriteString(c, "QUIT\r\n")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if g, want := <-got, `"QUIT\r\n" <nil>`; g != want {
		t.Errorf("the server read %s, want %s", g, want)
	}
}

// TestErrors: what a plain TCP connection reports, the wrapped one
// reports, with the same operation named.
func TestErrors(t *testing.T) {
	t.Run("silent server", func(t *testing.T) {
		c := peer(t, func(s net.Conn) { io.Copy(io.Discard, s) })
		c.SetDeadline(time.Now().Add(50 * time.Millisecond))
		io.WriteString(c, "NOOP\r\n")
		start := time.Now()
		_, err := c.Read(make([]byte, 16))
		var oe *net.OpError
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "read" || !oe.Timeout() {
			t.Errorf("got %v, want a read timeout", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("deadline passed before the read", func(t *testing.T) {
		c := peer(t, func(s net.Conn) { io.Copy(io.Discard, s) })
		io.WriteString(c, "NOOP\r\n")
		c.SetDeadline(time.Now().Add(-time.Second))
		_, err := c.Read(make([]byte, 16))
		var oe *net.OpError
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "write" {
			t.Errorf("got %v, want a write timeout (the held write never went out)", err)
		}
	})
	t.Run("server closes", func(t *testing.T) {
		c := peer(t, func(s net.Conn) { bufio.NewReader(s).ReadString('\n') })
		io.WriteString(c, "QUIT\r\n")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 16)); n != 0 || err != io.EOF {
			t.Errorf("got %d, %v; want io.EOF", n, err)
		}
	})
	t.Run("server resets", func(t *testing.T) {
		c := peer(t, func(s net.Conn) {
			bufio.NewReader(s).ReadString('\n')
			s.(*net.TCPConn).SetLinger(0)
		})
		io.WriteString(c, "RSET\r\n")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err := c.Read(make([]byte, 16))
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "read" || !strings.Contains(err.Error(), "connection reset") {
			t.Errorf("got %v, want a read error: connection reset", err)
		}
	})
	t.Run("closed locally", func(t *testing.T) {
		c := peer(t, func(s net.Conn) { io.Copy(io.Discard, s) })
		c.Close()
		io.WriteString(c, "NOOP\r\n")
		if _, err := c.Read(make([]byte, 16)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("got %v, want net.ErrClosed", err)
		}
	})
}

// TestFullSocketBuffer: a held write the socket cannot take at once (the
// server reads late, the buffers are small) goes out as a plain write and
// the reply is still read.
func TestFullSocketBuffer(t *testing.T) {
	const size = MaxHeld - 1 // held, larger than both small buffers
	c := peerBuffers(t, 2048, func(s net.Conn) {
		time.Sleep(100 * time.Millisecond)
		lineServer(0)(s)
	})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, strings.Repeat("h", size)+"\n")
	c.drainedAt, c.drained = sinceStart(), true // as after a reply: the held write goes out from the read
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if want := "1 " + strings.Repeat("h", size) + "\n"; line != want || err != nil {
		t.Fatalf("reply: %d bytes, %v; want %d", len(line), err, len(want))
	}
	if c.partSent != 1 {
		t.Errorf("%d held writes sent in part, want 1 (the socket took it all: the test did not test)", c.partSent)
	}
}

// TestWrapOnlyTCP: a connection that is not TCP is returned as it is.
func TestWrapOnlyTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := Wrap(a); got != a {
		t.Errorf("Wrap(pipe) = %T, want the pipe", got)
	}
}

// TestCloseDuringRead: Close while a Read waits for the reply to a held
// write ends the Read with net.ErrClosed, and the hold's buffer (still
// the Read's) is not handed to the next connection: that one's bytes
// arrive intact. Run with -race.
func TestCloseDuringRead(t *testing.T) {
	for range 20 {
		c := peer(t, func(s net.Conn) { io.Copy(io.Discard, s) })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "NOOP\r\n")
		done := make(chan error)
		go func() {
			_, err := c.Read(make([]byte, 16))
			done <- err
		}()
		time.Sleep(time.Millisecond)
		c.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("the Read ended with %v, want net.ErrClosed", err)
		}
	}
	c := peer(t, lineServer(0))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	want := strings.Repeat("z", 1000)
	io.WriteString(c, want+"\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if line != "1 "+want+"\n" || err != nil {
		t.Errorf("the next connection read %.40q..., %v", line, err)
	}
}

// TestWriteDuringSendKeepsOrder: a Write made while a Read is about to
// send what was held before it (a second goroutine's command) goes out
// after those bytes, not before them.
func TestWriteDuringSendKeepsOrder(t *testing.T) {
	got := make(chan string, 1)
	c := peer(t, func(s net.Conn) {
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4)
		_, err := io.ReadFull(s, buf)
		got <- fmt.Sprintf("%s %v", buf, err)
		io.WriteString(s, "ok\n")
	})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "A1\r\n")
	wrote := make(chan error, 1)
	c.beforeSend = func() {
		go func() {
			_, err := io.WriteString(c, "B2\r\n") // the Read is in progress: not held
			wrote <- err
		}()
		time.Sleep(50 * time.Millisecond) // time enough for B2 to overtake, if it could
	}
	c.drainedAt, c.drained = sinceStart(), true // as after a reply: the read waits first
	if _, err := c.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != "A1\r\n <nil>" {
		t.Errorf("the server read %q first, want A1", g)
	}
	if err := <-wrote; err != nil {
		t.Errorf("the second write: %v", err)
	}
}

// TestUnsolicitedDataAfterQuiet: a line the server sends on its own while
// the client is not reading (an untagged EXISTS between commands) is read
// at the client's next read, not with the reply to the command it just
// wrote, which comes much later.
func TestUnsolicitedDataAfterQuiet(t *testing.T) {
	c := peer(t, func(s net.Conn) {
		r := bufio.NewReader(s)
		io.WriteString(s, "greeting\n")
		r.ReadString('\n')
		io.WriteString(s, "ok1\n")
		time.Sleep(10 * time.Millisecond)
		io.WriteString(s, "* 1 EXISTS\n")
		r.ReadString('\n')
		time.Sleep(500 * time.Millisecond)
		io.WriteString(s, "ok2\n")
	})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	r.ReadString('\n')
	io.WriteString(c, "cmd1\n")
	if line, err := r.ReadString('\n'); line != "ok1\n" || err != nil {
		t.Fatalf("read %q, %v", line, err)
	}
	time.Sleep(50 * time.Millisecond) // quiet; the EXISTS arrives
	io.WriteString(c, "cmd2\n")
	start := time.Now()
	line, err := r.ReadString('\n')
	if line != "* 1 EXISTS\n" || err != nil {
		t.Fatalf("read %q, %v", line, err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("the EXISTS waiting since before the write was read after %v, with the reply", d)
	}
	if line, err := r.ReadString('\n'); line != "ok2\n" || err != nil {
		t.Errorf("then read %q, %v", line, err)
	}
}
