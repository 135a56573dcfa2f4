package smtpsink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	smtp "github.com/mailbench/mailbench/internal/gosmtp"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
	"github.com/mailbench/mailbench/internal/testing/testcert"
)

const ioTimeout = 5 * time.Second

// startSink starts a sink on a loopback port and closes it at the end of the test.
func startSink(t testing.TB, opts Options) *Sink {
	t.Helper()
	opts.Addr = "127.0.0.1:0"
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		if err := s.Wait(); err != nil {
			t.Errorf("Wait: %v", err)
		}
	})
	return s
}

// dialClient connects a go-smtp client and says EHLO.
func dialClient(t testing.TB, s *Sink) *smtp.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr().String(), ioTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := smtp.NewClient(conn)
	c.CommandTimeout, c.SubmissionTimeout = ioTimeout, ioTimeout
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("EHLO: %v", err)
	}
	return c
}

// testMessage renders a message in the generator's format; a zero sent omits the header.
func testMessage(id string, sent time.Time, body string) []byte {
	var b strings.Builder
	b.WriteString("From: <a@example.test>\r\nTo: <b@remote.test>\r\nSubject: test\r\n")
	if id != "" {
		fmt.Fprintf(&b, "%s: %s\r\n", HeaderID, id)
	}
	if !sent.IsZero() {
		fmt.Fprintf(&b, "%s: %s\r\n", HeaderSent, sent.Format(time.RFC3339Nano))
	}
	fmt.Fprintf(&b, "%s: %s\r\n\r\n%s", HeaderSum, msgsum.BodySum([]byte(body)), body)
	return []byte(b.String())
}

// send runs one transaction and returns the SMTP code of the first failure
// (0 when accepted) and the step at which it failed.
func send(c *smtp.Client, from string, to []string, msg []byte) (code int, step string, err error) {
	fail := func(step string, err error) (int, string, error) {
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			return se.Code, step, err
		}
		return -1, step, err
	}
	if err := c.Mail(from, nil); err != nil {
		return fail("MAIL", err)
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			return fail("RCPT", err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fail("DATA", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fail("body", err)
	}
	if err := w.Close(); err != nil {
		return fail("dot", err)
	}
	return 0, "", nil
}

// arrivals collects what OnMessage reports.
type arrivals struct {
	mu   sync.Mutex
	list []delivery.Arrival
}

func (a *arrivals) hook(x delivery.Arrival) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, x)
}

// wait returns the arrivals once there are n (or ioTimeout has passed):
// OnMessage runs once the 250 is out, so a client that has read its 250
// may look before the hook has run.
func (a *arrivals) wait(n int) []delivery.Arrival {
	for deadline := time.Now().Add(ioTimeout); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if got := a.all(); len(got) >= n {
			return got
		}
	}
	return a.all()
}

func (a *arrivals) all() []delivery.Arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]delivery.Arrival(nil), a.list...)
}

// rawConn is a line-level SMTP conversation for input go-smtp's client won't send.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	tp   *textproto.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return newRawConn(t, conn)
}

// newRawConn wraps conn with an overall deadline; closed at the end of the test.
func newRawConn(t testing.TB, conn net.Conn) *rawConn {
	conn.SetDeadline(time.Now().Add(ioTimeout))
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn, tp: textproto.NewConn(conn)}
}

// reply reads one (possibly multi-line) reply and returns its code, or -1
// when the connection ended.
func (r *rawConn) reply() (int, string) {
	code, msg, err := r.tp.ReadResponse(0)
	if err != nil {
		var pe textproto.ProtocolError
		if errors.As(err, &pe) || code == 0 {
			return -1, err.Error()
		}
	}
	return code, msg
}

func (r *rawConn) write(s string) {
	r.t.Helper()
	if _, err := r.conn.Write([]byte(s)); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// selfSigned returns a server certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t testing.TB) (*tls.Config, *x509.CertPool) {
	t.Helper()
	return testcert.New(t, "127.0.0.1")
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitMessages waits (up to ioTimeout) until the sink has counted at least
// n messages: it counts one just after its 250 is written, so a client may
// read the reply a moment before. A count that stays short is left for the
// caller's exact check to report.
func waitMessages(t testing.TB, s *Sink, n int64) {
	t.Helper()
	for deadline := time.Now().Add(ioTimeout); s.Counts().Messages < n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}
