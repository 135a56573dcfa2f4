package smtpsink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	smtp "github.com/mailbench/mailbench/internal/gosmtp"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
)

// feed writes input to a new connection, half-closes it and reads the
// replies until the sink hangs up, so that the sink has handled every byte.
func feed(t testing.TB, addr string, input []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(ioTimeout))
	drained := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, conn)
		drained <- err
	}()
	conn.Write(input) // fails early if the sink hangs up, which is fine
	conn.(*net.TCPConn).CloseWrite()
	if err := <-drained; err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("sink did not hang up after the input ended: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// FuzzSession feeds arbitrary bytes into a sink connection and checks that
// the sink reported only well-formed arrivals, did not panic, and still
// answers EHLO and NOOP on a new connection.
func FuzzSession(f *testing.F) {
	body := "hello\r\n..dot\r\n"
	msg := string(testMessage("seed", time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), body))
	for _, seed := range []string{
		"EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\n" + msg + ".\r\nQUIT\r\n",
		"HELO c\r\nMAIL FROM:<> SIZE=10\r\nRCPT TO:<b@y>\r\nRCPT TO:<c@y>\r\nDATA\r\nSubject: x\r\n\r\nbody\r\n.\r\nRSET\r\nNOOP\r\n",
		"EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nBDAT 5\r\nSubjeBDAT 9 LAST\r\nct: x\r\n\r\n",
		"EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nBDAT 100\r\nshort\r\nRSET\r\n",
		"EHLO c\r\nSTARTTLS\r\n\x16\x03\x01\x00\x05hello",
		"EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\n" + strings.Repeat("z", 300) + "\r\n.\r\n",
		"EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nnot a header\r\n\r\n.\r\n",
		"EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nX-Mailbench-Sent: 2026-13-45T99:00:00Z\r\n\r\n.\r\n",
		"AUTH PLAIN AGFAYg==\r\nVRFY x\r\nEXPN y\r\nHELP\r\n\x00\xff\xfe\r\n",
		"DATA\r\nBDAT x\r\nBDAT 1 LAST\r\nx",
	} {
		f.Add([]byte(seed))
	}

	tlsConfig, _ := selfSigned(f)
	var errLog syncBuffer
	var arrivalErr syncBuffer
	s, err := New(Options{
		Addr:            "127.0.0.1:0",
		TLSConfig:       tlsConfig,
		MaxMessageBytes: 4096,
		MaxRecipients:   3,
		MaxLineLength:   256,
		ReadTimeout:     3 * time.Second,
		WriteTimeout:    3 * time.Second,
		Faults:          Faults{RejectEvery: 3},
		ErrorLog:        log.New(&errLog, "", 0),
		OnMessage: func(a delivery.Arrival) {
			if !msgsum.Valid(a.BodySum) || a.Bytes < 0 || len(a.Recipients) == 0 || len(a.Recipients) > 3 {
				arrivalErr.Write([]byte("bad arrival\n"))
			}
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	addr := s.Addr().String()

	f.Fuzz(func(t *testing.T, input []byte) {
		feed(t, addr, input)

		check, err := net.DialTimeout("tcp", addr, ioTimeout)
		if err != nil {
			t.Fatalf("dial after input %q: %v", input, err)
		}
		check.SetDeadline(time.Now().Add(ioTimeout))
		c := smtp.NewClient(check)
		defer c.Close()
		if err := c.Hello("check.test"); err != nil {
			t.Fatalf("EHLO after input %q: %v", input, err)
		}
		if err := c.Noop(); err != nil {
			t.Fatalf("NOOP after input %q: %v", input, err)
		}
		// go-smtp recovers panics and logs them. v0.25.1 has a race of its
		// own: a BDAT goroutine may call Conn.Session() after the connection
		// closed and panic on the nil session; that panic is recovered and
		// the sink serves on. A panic in the sink's own code is a failure.
		if log := errLog.String(); strings.Contains(log, "panic serving") && strings.Contains(log, "mailbench/smtpsink.") {
			t.Fatalf("sink panicked (input %q or an earlier one):\n%s", input, log)
		}
		if arrivalErr.String() != "" {
			t.Fatalf("malformed arrival after %q", input)
		}
	})
}

// TestFeed checks that feed drives the sink through whole transactions, so
// that FuzzSession reaches message handling.
func TestFeed(t *testing.T) {
	msg := string(testMessage("f", time.Time{}, "x\r\n"))
	txn := "MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\n" + msg + ".\r\n"
	tests := []struct {
		name  string
		input string
		want  Counts // Messages, Errors only
	}{
		{"one message", "EHLO c\r\n" + txn + "QUIT\r\n", Counts{Messages: 1}},
		{"pipelined, no QUIT", "EHLO c\r\n" + txn + txn, Counts{Messages: 2}},
		{"BDAT", "EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\n" + fmt.Sprintf("BDAT %d LAST\r\n%s", len(msg), msg), Counts{Messages: 1}},
		{"cut inside DATA", "EHLO c\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\nSubject: x\r\n\r\npart", Counts{Errors: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSink(t, Options{})
			feed(t, s.Addr().String(), []byte(tt.input))
			waitMessages(t, s, tt.want.Messages)
			if got := s.Counts(); got.Messages != tt.want.Messages || got.Errors != tt.want.Errors {
				t.Errorf("Counts = %+v, want %d messages, %d errors", got, tt.want.Messages, tt.want.Errors)
			}
		})
	}
}
