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
