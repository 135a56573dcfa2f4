package smtpclient

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

// hostileSMTP answers every connection with banner; when banner ends in
// CRLF it waits for EHLO and answers with ehlo. The last part it sends
// (banner or ehlo) is followed by endless copies of filler, until the
// client goes away or 256 MiB are out. It counts the bytes written.
type hostileSMTP struct {
	addr  string
	flood testutil.Flood
}

func startHostileSMTP(t *testing.T, banner, ehlo, filler string) *hostileSMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	hs := &hostileSMTP{addr: ln.Addr().String()}
	chunk := []byte(strings.Repeat(filler, (64<<10)/len(filler)))
	hs.flood.Limit = 256 << 20
	stream := func(c net.Conn, head string) { hs.flood.Send(c, head, chunk) }
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				if ehlo == "" {
					stream(c, banner)
					return
				}
				c.Write([]byte(banner))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil || !strings.HasPrefix(strings.ToUpper(line), "EHLO") {
					return
				}
				stream(c, ehlo)
			}()
		}
	}()
	return hs
}

// TestHostileServerBounded: an endless banner, an endless EHLO line and an
// endless multi-line EHLO reply each cost Connect a protocol error naming
// the bound, long before the deadline, and the client stops reading.
func TestHostileServerBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, banner, ehlo, filler string
	}{
		{"endless banner line", "220 ", "", "x"},
		{"endless multi-line banner", "220-hi\r\n", "", "220-more\r\n"},
		{"endless EHLO line", "220 hostile ESMTP\r\n", "250-", "x"},
		{"endless multi-line EHLO", "220 hostile ESMTP\r\n", "250-hostile\r\n", "250-PIPELINING\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := startHostileSMTP(t, tc.banner, tc.ehlo, tc.filler)
			start := time.Now()
			c, err := Connect(context.Background(), Config{Address: hs.addr, Timeout: 20 * time.Second})
			took := time.Since(start)
			if c != nil {
				c.Close()
				t.Fatal("connected to a hostile server")
			}
			var pe *measure.ProtocolError
			if !errors.As(err, &pe) || measure.Classify(err) != measure.Protocol {
				t.Fatalf("error %v (class %v), want a protocol error", err, measure.Classify(err))
			}
			if !strings.Contains(err.Error(), "65536 bytes") && !strings.Contains(err.Error(), "2000 bytes") {
				t.Errorf("error %q does not name the bound", err)
			}
			if took > 10*time.Second {
				t.Errorf("took %v: the bound did not end the read", took)
			}
			time.Sleep(100 * time.Millisecond)
			if w := hs.flood.Written.Load(); w > 32<<20 {
				t.Errorf("the server wrote %d MiB before the client stopped reading", w>>20)
			}
		})
	}
}

// TestReplyLimitConnPassesRealReplies: replies within the bound pass
// byte for byte however the reads split them, and the count starts again
// after each final line.
func TestReplyLimitConnPassesRealReplies(t *testing.T) {
	replies := "220 ok\r\n" + strings.Repeat("250-"+strings.Repeat("e", 90)+"\r\n", 10) + "250 last\r\n" +
		strings.Repeat("250 "+strings.Repeat("f", 90)+"\r\n", 100)
	for _, chunk := range []int{1, 3, 7, 64, 4096} {
		a, b := net.Pipe()
		go func() {
			for s := replies; len(s) > 0; {
				n := min(chunk, len(s))
				a.Write([]byte(s[:n]))
				s = s[n:]
			}
			a.Close()
		}()
		r := newReplyLimitConn(b, 1100)
		var got strings.Builder
		buf := make([]byte, 512)
		for {
			n, err := r.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("chunk %d: %v", chunk, err)
				}
				break
			}
		}
		if got.String() != replies {
			t.Errorf("chunk %d: replies changed", chunk)
		}
	}
}
