package smtpsink

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// trickle dials the sink, reads its greeting, sends pre (whole lines),
// then one byte every step until the sink closes the connection or limit
// passes. It returns how long the connection lasted after pre was sent.
func trickle(t *testing.T, s *Sink, pre string, step, limit time.Duration) time.Duration {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr().String(), ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if pre != "" {
		if _, err := io.WriteString(c, pre); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, br) // the replies, until the sink closes
		close(closed)
	}()
	for time.Since(start) < limit {
		select {
		case <-closed:
			return time.Since(start)
		case <-time.After(step):
		}
		c.Write([]byte("x"))
	}
	return time.Since(start)
}

// TestSlowlorisBounded: a client that sends one byte now and then, never a
// line end, is cut at the read timeout whether it trickles a command line
// or a message's DATA: the deadline is per command line and per DATA, not
// per read.
func TestSlowlorisBounded(t *testing.T) {
	t.Parallel()
	const timeout = 600 * time.Millisecond
	s := startSink(t, Options{ReadTimeout: timeout, WriteTimeout: timeout})
	for _, tc := range []struct{ name, pre string }{
		{"command line", ""},
		{"DATA", "EHLO c\r\nMAIL FROM:<a@b.test>\r\nRCPT TO:<c@d.test>\r\nDATA\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := trickle(t, s, tc.pre, 100*time.Millisecond, 5*time.Second); d > 2*timeout {
				t.Errorf("a trickling connection lasted %v with a %v timeout", d, timeout)
			}
		})
	}
}

// TestFullSinkEvictsTheIdlest: when every connection slot is held by
// clients that send nothing, a client with mail still gets in: the
// idlest connection is closed with a 421 and counted as evicted.
func TestFullSinkEvictsTheIdlest(t *testing.T) {
	t.Parallel()
	s := startSink(t, Options{MaxConnections: 4})
	var idle []net.Conn
	for range 4 {
		c, err := net.DialTimeout("tcp", s.Addr().String(), ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		bufio.NewReader(c).ReadString('\n')
		idle = append(idle, c)
	}
	time.Sleep(minIdleToEvict + 200*time.Millisecond)
	for i := range 3 {
		c := dialClient(t, s)
		if err := c.SendMail("a@b.test", []string{"c@d.test"}, strings.NewReader(string(testMessage("m", time.Time{}, "hi\r\n")))); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		c.Quit()
	}
	if st := s.Counts(); st.Evicted < 1 || st.Evicted > 3 {
		t.Errorf("evicted %d, want 1 to 3 (one per new client at most)", st.Evicted)
	}
	// An evicted client was told why.
	idle[0].SetReadDeadline(time.Now().Add(ioTimeout))
	b, _ := io.ReadAll(idle[0])
	if !strings.Contains(string(b), "421") {
		t.Errorf("the first idle connection read %q, want a 421", b)
	}
}

// TestCountedOnceTheReplyIsOut: a message whose 250 never reaches the
// client (the connection was reset while the sink held the reply) is not
// counted and not reported: the client will send it again, and that second
// arrival is the message's only one. The same message with the client
// waiting for its reply is counted once.
func TestCountedOnceTheReplyIsOut(t *testing.T) {
	t.Parallel()
	var got arrivals
	s := startSink(t, Options{OnMessage: got.hook, Faults: Faults{Delay: 300 * time.Millisecond}})
	msg := string(testMessage("r00000001-000000000001", time.Time{}, "x\r\n"))
	c, err := net.DialTimeout("tcp", s.Addr().String(), ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	br.ReadString('\n')
	io.WriteString(c, "HELO c\r\nMAIL FROM:<a@b.test>\r\nRCPT TO:<c@d.test>\r\nDATA\r\n")
	for range 4 {
		br.ReadString('\n')
	}
	io.WriteString(c, msg+".\r\n")
	time.Sleep(50 * time.Millisecond) // the sink is in the message's delay
	c.(*net.TCPConn).SetLinger(0)
	c.Close() // a reset: the 250 cannot be written
	eventually(t, "the connection to end", func() bool { return s.Counts().Active == 0 })
	if n := s.Counts().Messages; n != 0 || len(got.all()) != 0 {
		t.Fatalf("counted %d, reported %d: a message whose 250 was never written", n, len(got.all()))
	}
	// The client's retry, waiting for the reply this time.
	cl := dialClient(t, s)
	if code, step, err := send(cl, "a@b.test", []string{"c@d.test"}, []byte(msg)); err != nil {
		t.Fatalf("%s: %d %v", step, code, err)
	}
	waitMessages(t, s, 1)
	if n := s.Counts().Messages; n != 1 || len(got.all()) != 1 {
		t.Errorf("counted %d, reported %d after the retry: want 1, 1", n, len(got.all()))
	}
}
