package imapclient

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
)

// hostileServer answers every connection with greeting, then, on the line
// that starts with "<tag> LOGIN", writes afterLogin followed by endless
// filler bytes (no CRLF); TAG in afterLogin is the LOGIN's tag, until the client goes away or cap bytes are out.
// It counts the bytes it managed to write.
type hostileServer struct {
	addr  string
	flood testutil.Flood
}

const hostileCap = 256 << 20

func startHostile(t *testing.T, greeting, afterLogin string) *hostileServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	hs := &hostileServer{addr: ln.Addr().String()}
	filler := []byte(strings.Repeat("x", 64<<10))
	hs.flood.Limit = hostileCap
	stream := func(c net.Conn, head string) { hs.flood.Send(c, head, filler) }
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				if afterLogin == "" {
					stream(c, greeting)
					return
				}
				c.Write([]byte(greeting))
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if f := strings.Fields(line); len(f) >= 2 && strings.EqualFold(f[1], "LOGIN") {
						stream(c, strings.ReplaceAll(afterLogin, "TAG", f[0]))
						return
					}
				}
			}()
		}
	}()
	return hs
}

// TestHostileServerBounded: a server that sends an endless line or
// announces a huge literal costs the operation a protocol error once the
// bound is reached, well before the deadline, and the client stops reading:
// the server gets rid of only a bounded number of bytes (the bound plus
// the sockets' buffers), not the hundreds of MiB it has to send.
func TestHostileServerBounded(t *testing.T) {
	t.Parallel()
	const greeting = "* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] hostile\r\n"
	for _, tc := range []struct {
		name, greeting, afterLogin string
	}{
		{"greeting without CRLF", "* OK ", ""},
		{"endless line after LOGIN", greeting, "* OK "},
		{"LIST with a 1 GiB literal", greeting, "* LIST () \"/\" {1073741824}\r\n"},
		{"endless tagged reply", greeting, "TAG OK "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := startHostile(t, tc.greeting, tc.afterLogin)
			rec := &recorder{}
			start := time.Now()
			c, err := Connect(context.Background(), Config{Address: hs.addr, Timeout: 20 * time.Second, Observer: rec}, testUser, testPassword)
			took := time.Since(start)
			if c != nil {
				c.Close()
				t.Fatal("connected to a hostile server")
			}
			if got := measure.Classify(err); got != measure.Protocol {
				t.Fatalf("class %v (%v), want protocol", got, err)
			}
			if errors.Is(err, measure.ErrTimeout) || took > 10*time.Second {
				t.Errorf("took %v (%v): the bound did not end the read", took, err)
			}
			if !strings.Contains(err.Error(), "1048576 bytes") {
				t.Errorf("error %q does not name the bound", err)
			}
			// Let the server notice the close.
			time.Sleep(100 * time.Millisecond)
			if w := hs.flood.Written.Load(); w > 64<<20 {
				t.Errorf("the server wrote %d MiB before the client stopped reading", w>>20)
			}
		})
	}
}

// TestHostileCapabilityList: a capability list with a '(' in it, in the
// greeting or in LOGIN's reply, is a protocol error at once. go-imap
// beta.8 spun on it forever with every byte read, so the deadline could
// not end it: one connection held a core until the process ended
// (internal/goimap caps-loop.patch).
func TestHostileCapabilityList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, greeting, afterLogin string
	}{
		{"in the greeting", "* OK [CAPABILITY IMAP4rev1 (] hostile\r\n", ""},
		{"in LOGIN's reply", "* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] hostile\r\n", "TAG OK [CAPABILITY IMAP4rev1 IDLE (] in\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := startHostile(t, tc.greeting, tc.afterLogin)
			start := time.Now()
			c, err := Connect(context.Background(), Config{Address: hs.addr, Timeout: 20 * time.Second, Observer: &recorder{}}, testUser, testPassword)
			took := time.Since(start)
			if c != nil {
				c.Close()
				t.Fatal("connected")
			}
			if got := measure.Classify(err); got != measure.Protocol || took > 10*time.Second {
				t.Fatalf("class %v after %v (%v), want a protocol error at once", got, took, err)
			}
		})
	}
}
