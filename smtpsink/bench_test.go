package smtpsink

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchBody is a 5 KiB message like smtp-source -l 5120 sends: a few header
// fields, then lines of filler.
var benchBody = func() []byte {
	var b bytes.Buffer
	b.WriteString("From: <sender@source.test>\r\nTo: <rcpt@sink.test>\r\nDate: Mon, 30 Nov 2026 12:00:00 +0000\r\n")
	b.WriteString("Message-Id: <1.2@source.test>\r\nX-Mailbench-Sent: 2026-11-30T12:00:00.123456789Z\r\n\r\n")
	for b.Len() < 5120 {
		b.WriteString("La de da de da 1.\r\n..La de da de da 2, a line that starts with a dot (stuffed).\r\n")
	}
	b.WriteString(".\r\n")
	return b.Bytes()
}()

// benchClient is a lean SMTP client for the benchmark: one command at a
// time (no pipelining), as smtp-source does.
type benchClient struct {
	conn net.Conn
	br   *bufio.Reader
}

func benchDial(b *testing.B, addr string) *benchClient {
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		b.Fatal(err)
	}
	c := &benchClient{conn: conn, br: bufio.NewReader(conn)}
	c.expect(b, nil, '2') // banner
	c.expect(b, []byte("EHLO source.test\r\n"), '2')
	return c
}

// expect writes cmd (if any), reads one reply and checks its first digit.
func (c *benchClient) expect(b *testing.B, cmd []byte, digit byte) {
	c.conn.SetDeadline(time.Now().Add(ioTimeout))
	if cmd != nil {
		if _, err := c.conn.Write(cmd); err != nil {
			b.Error(err)
			return
		}
	}
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			b.Error(err)
			return
		}
		if len(line) < 4 || line[0] != digit {
			b.Errorf("reply %q to %q, want %cxx", line, cmd, digit)
			return
		}
		if line[3] == ' ' {
			return
		}
	}
}

var (
	benchMail = []byte("MAIL FROM:<sender@source.test>\r\n")
	benchRcpt = []byte("RCPT TO:<rcpt@sink.test>\r\n")
	benchData = []byte("DATA\r\n")
	benchQuit = []byte("QUIT\r\n")
)

func (c *benchClient) send(b *testing.B) {
	c.expect(b, benchMail, '2')
	c.expect(b, benchRcpt, '2')
	c.expect(b, benchData, '3')
	c.expect(b, benchBody, '2')
}

// BenchmarkSinkMessage is the sink's cost per 5 KiB message with the
// options of `mailbench sink`, client and sink in one process on
// 127.0.0.1, 20 sessions as in bench/sink-vs-smtp-sink: keep sends every
// message over the sessions' connections (smtp-source -d), reconnect opens a
// connection per message (smtp-source's default). ns/op is per message;
// B/op and allocs/op count the client too (a few per message).
func BenchmarkSinkMessage(b *testing.B) {
	const sessions = 20
	for _, mode := range []string{"keep", "reconnect"} {
		b.Run(mode, func(b *testing.B) {
			s := startSink(b, Options{})
			addr := s.Addr().String()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.SetBytes(int64(len(benchBody)))
			b.ReportAllocs()
			b.ResetTimer()
			for range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var c *benchClient
					for next.Add(1) <= int64(b.N) {
						if c == nil {
							c = benchDial(b, addr)
						}
						c.send(b)
						if mode == "reconnect" {
							c.expect(b, benchQuit, '2')
							c.conn.Close()
							c = nil
						}
					}
					if c != nil {
						c.expect(b, benchQuit, '2')
						c.conn.Close()
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			waitMessages(b, s, int64(b.N))
			if got := s.Counts(); got.Messages != int64(b.N) || got.Errors != 0 {
				b.Fatalf("counts %+v, want %d messages", got, b.N)
			}
		})
	}
}

// TestBenchBodyIsAccepted keeps the benchmark's message honest: the sink
// reads it whole, header and dot-unstuffed body.
func TestBenchBodyIsAccepted(t *testing.T) {
	var arr arrivals
	s := startSink(t, Options{OnMessage: arr.hook})
	c := dialRaw(t, s.Addr().String())
	for _, cmd := range []string{"EHLO x\r\n", string(benchMail), string(benchRcpt)} {
		c.reply() // banner, then the reply to the previous command
		c.write(cmd)
	}
	c.reply()
	c.write(string(benchData))
	if code, _ := c.reply(); code != 354 {
		t.Fatalf("DATA: %d", code)
	}
	c.write(string(benchBody))
	if code, text := c.reply(); code != 250 {
		t.Fatalf("end of data: %d %s", code, text)
	}
	got := arr.wait(1)
	want := int64(len(benchBody)) - 3 - int64(strings.Count(string(benchBody), "\r\n..")) // final ".\r\n", stuffed dots
	if len(got) != 1 || got[0].Bytes != want || got[0].Sent.IsZero() {
		t.Fatalf("arrivals %+v, want one of %d bytes with a Sent time", got, want)
	}
}

// TestCoalescedRepliesArrive sends commands pipelined in one write and QUIT
// after the data: every reply must reach the client although the sink holds
// replies until it reads again, the 221 included (written on close).
func TestCoalescedRepliesArrive(t *testing.T) {
	s := startSink(t, Options{})
	c := dialRaw(t, s.Addr().String())
	if code, _ := c.reply(); code != 220 {
		t.Fatalf("banner %d", code)
	}
	c.write("EHLO x\r\n" + string(benchMail) + string(benchRcpt) + string(benchData))
	for _, want := range []int{250, 250, 250, 354} {
		if code, text := c.reply(); code != want {
			t.Fatalf("reply %d %s, want %d", code, text, want)
		}
	}
	c.write(string(benchBody) + "QUIT\r\n")
	for _, want := range []int{250, 221} {
		if code, text := c.reply(); code != want {
			t.Fatalf("reply %d %s, want %d", code, text, want)
		}
	}
	if code, _ := c.reply(); code != -1 {
		t.Errorf("connection still open after 221")
	}
}
