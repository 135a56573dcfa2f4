package smtpclient

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
)

// authScript is a hand-written SMTP server offering AUTH PLAIN LOGIN and
// STARTTLS-less EHLO; onAuth handles the AUTH line and what follows.
func authScript(onAuth func(c net.Conn, br *bufio.Reader, line string)) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, done <-chan struct{}) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "220 script ESMTP\r\n")
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\r\n")
			switch cmd := strings.ToUpper(line); {
			case strings.HasPrefix(cmd, "EHLO"):
				io.WriteString(c, "250-script\r\n250 AUTH PLAIN LOGIN\r\n")
			case strings.HasPrefix(cmd, "AUTH"):
				onAuth(c, br, line)
				return
			default:
				io.WriteString(c, "250 ok\r\n")
			}
		}
	}
}

// TestNoSecretInAnyErrorLink runs every kind of failure a Connect with
// credentials can meet (refused credentials echoed back in clear and in
// base64, malformed replies, hang-ups, stalls, refused connections, TLS
// failures) and walks the whole chain of the error returned and observed:
// no link may print the password, and the error keeps its class.
func TestNoSecretInAnyErrorLink(t *testing.T) {
	const wrong = "Wrong-" + testPassword
	serverTLS, _ := testCert(t)
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}()
	echo := func(c net.Conn, br *bufio.Reader, line string) {
		io.WriteString(c, "535 5.7.8 you sent "+line+"\r\n")
	}
	loginEcho := func(c net.Conn, br *bufio.Reader, line string) {
		io.WriteString(c, "334 UGFzc3dvcmQ6\r\n")
		resp, _ := br.ReadString('\n')
		io.WriteString(c, "535 5.7.8 you sent "+strings.TrimSpace(resp)+"\r\n")
	}
	tests := []struct {
		name    string
		addr    func(t *testing.T) string
		mode    TLSMode
		auth    string
		class   measure.ErrorClass
		timeout time.Duration // 5s when zero
	}{
		{"plain refused, echoed", func(t *testing.T) string {
			return startServer(t, &backend{requireAuth: true}, TLSNone, nil)
		}, TLSNone, AuthPlain, measure.Auth, 0},
		{"login refused, echoed", func(t *testing.T) string {
			return startServer(t, &backend{requireAuth: true}, TLSNone, nil)
		}, TLSNone, AuthLogin, measure.Auth, 0},
		{"plain base64 echoed", func(t *testing.T) string { return scriptedServer(t, authScript(echo)) }, TLSNone, AuthPlain, measure.Auth, 0},
		{"login base64 echoed", func(t *testing.T) string { return scriptedServer(t, authScript(loginEcho)) }, TLSNone, AuthLogin, measure.Auth, 0},
		{"malformed reply with the password", func(t *testing.T) string {
			return scriptedServer(t, authScript(func(c net.Conn, _ *bufio.Reader, _ string) {
				io.WriteString(c, "5x5 "+wrong+"\r\n")
			}))
		}, TLSNone, AuthPlain, measure.Protocol, 0}, // a malformed reply code: no refusal
		{"hang-up after AUTH", func(t *testing.T) string {
			return scriptedServer(t, authScript(func(c net.Conn, _ *bufio.Reader, _ string) { c.Close() }))
		}, TLSNone, AuthPlain, measure.Connection, 0},
		{"stall after AUTH", func(t *testing.T) string {
			return scriptedServer(t, authScript(func(c net.Conn, br *bufio.Reader, _ string) { io.Copy(io.Discard, br) }))
		}, TLSNone, AuthLogin, measure.Timeout, 300 * time.Millisecond},
		{"connection refused", func(*testing.T) string { return refused }, TLSNone, AuthPlain, measure.Connection, 0},
		{"untrusted certificate, implicit", func(t *testing.T) string {
			return startServer(t, &backend{}, TLSImplicit, serverTLS)
		}, TLSImplicit, AuthPlain, measure.TLS, 0},
		{"untrusted certificate, starttls", func(t *testing.T) string {
			return startServer(t, &backend{}, TLSStartTLS, serverTLS)
		}, TLSStartTLS, AuthLogin, measure.TLS, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			if tt.timeout == 0 {
				tt.timeout = 5 * time.Second
			}
			c, err := Connect(context.Background(), Config{
				Address: tt.addr(t), TLS: tt.mode, Timeout: tt.timeout,
				Auth: tt.auth, Username: testUser, Password: wrong, Observer: rec,
			})
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			if got := measure.Classify(err); got != tt.class {
				t.Errorf("Classify(%v) = %q, want %q", err, got, tt.class)
			}
			testutil.CheckNoSecret(t, err, rec.All(), testUser, wrong)
		})
	}
}

// opaqueError prints only its own text but wraps err: a secret inside is
// reachable by unwrapping only.
type opaqueError struct {
	text string
	err  error
}

func (e *opaqueError) Error() string { return e.text }
func (e *opaqueError) Unwrap() error { return e.err }

// TestScrubChains feeds scrub chains where the password sits below the
// top (behind a wrapper that does not print it, or in one branch of a
// multi-error) and checks that no link keeps it while errors.Is, errors.As
// and measure.Classify still see what they saw before.
func TestScrubChains(t *testing.T) {
	const pw = "hunter2-Secret"
	c := &Client{cfg: Config{Username: testUser, Password: pw}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name   string
		err    error
		is     []error
		scrubs bool // the result must not be err itself
	}{
		{"clean net error kept whole", refused, []error{syscall.ECONNREFUSED}, false},
		{"hidden behind an opaque wrapper", &opaqueError{"auth failed", fmt.Errorf("server said %s: %w", pw, io.ErrUnexpectedEOF)},
			[]error{io.ErrUnexpectedEOF}, true},
		{"one branch of a join", errors.Join(refused, errors.New("echo "+pw)), []error{syscall.ECONNREFUSED}, true},
		{"join under a wrapper", fmt.Errorf("x: %w", errors.Join(os.ErrDeadlineExceeded, &opaqueError{"y", errors.New(pw)})),
			[]error{measure.ErrTimeout}, true},
		{"protocol error text", fmt.Errorf("x: %w", &measure.ProtocolError{Op: "AUTH", Reply: "535 " + pw}), nil, true},
		{"cancelled", fmt.Errorf("%s: %w", pw, context.Canceled), []error{context.Canceled}, true},
		{"tls", &measure.TLSError{Op: "TLS handshake", Err: errors.New("bad " + pw)}, nil, true},
		{"base64 of the PLAIN blob", errors.New("sent " + base64.StdEncoding.EncodeToString([]byte("\x00"+testUser+"\x00"+pw))), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.scrub(tt.err)
			if got == nil {
				t.Fatal("scrub returned nil")
			}
			if (got != tt.err) != tt.scrubs {
				t.Errorf("scrub replaced the error: %v, want %v", got != tt.err, tt.scrubs)
			}
			testutil.CheckNoSecret(t, got, nil, testUser, pw)
			if measure.Classify(got) != measure.Classify(tt.err) {
				t.Errorf("class %q, want %q", measure.Classify(got), measure.Classify(tt.err))
			}
			for _, target := range tt.is {
				if !errors.Is(got, target) {
					t.Errorf("errors.Is(%v, %v) lost", got, target)
				}
			}
			var pe *measure.ProtocolError
			if errors.As(tt.err, &pe) {
				var gpe *measure.ProtocolError
				if !errors.As(got, &gpe) || gpe.Op != pe.Op || !strings.HasPrefix(gpe.Reply, "535 ") {
					t.Errorf("ProtocolError %+v lost, got %+v", pe, gpe)
				}
			}
			if strings.Contains(tt.err.Error(), pw) && !strings.Contains(got.Error(), "[redacted]") {
				t.Errorf("text %q: no [redacted] mark", got)
			}
			// wrap, which every failure of the client goes through, too.
			wrapped := c.wrap(newOp(context.Background(), time.Now(), time.Minute), "AUTH", tt.err)
			testutil.CheckNoSecret(t, wrapped, nil, testUser, pw)
			if measure.Classify(wrapped) != measure.Classify(tt.err) {
				t.Errorf("wrapped: class %q, want %q", measure.Classify(wrapped), measure.Classify(tt.err))
			}
		})
	}
	if c.scrub(nil) != nil {
		t.Error("scrub(nil) != nil")
	}
}
