package imapclient

import (
	"context"
	"crypto/tls"
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

// TestNoSecretInAnyErrorLink runs the failures a Connect can meet with a
// known password (refusals that echo it in clear or in base64, malformed
// replies, hang-ups, stalls, refused connections, TLS failures) and walks
// the whole chain of the error returned and observed: no link may print the
// password, and the error keeps its class.
func TestNoSecretInAnyErrorLink(t *testing.T) {
	const wrong = "Wrong-" + testPassword
	const saslGreeting = "* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN SASL-IR] fake ready\r\n"
	mt := startMem(t, 0)
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}()
	echo := func(verb, resp string, action fakeAction) fakeScript {
		return func(cmd string) (string, fakeAction) {
			if strings.HasPrefix(cmd, verb) {
				return strings.ReplaceAll(resp, "CMD", cmd), action
			}
			return "%[1]s BAD what\r\n", reply
		}
	}
	fake := func(greeting string, script fakeScript) func(t *testing.T) string {
		return func(t *testing.T) string { return startFake(t, greeting, script).addr }
	}
	tests := []struct {
		name  string
		addr  func(t *testing.T) string
		cfg   Config
		class measure.ErrorClass
	}{
		{"login refused", func(*testing.T) string { return mt.addr }, Config{Auth: AuthLogin}, measure.Auth},
		{"plain refused", func(*testing.T) string { return mt.addr }, Config{Auth: AuthPlain}, measure.Auth},
		{"login echoed in NO", fake(fakeGreeting, echo("LOGIN ", "%[1]s NO [AUTHENTICATIONFAILED] you sent CMD\r\n", reply)),
			Config{Auth: AuthLogin}, measure.Auth},
		{"login echoed in BAD", fake(fakeGreeting, echo("LOGIN ", "%[1]s BAD CMD\r\n", reply)),
			Config{Auth: AuthLogin}, measure.Auth},
		{"login echoed untagged, then hang-up", fake(fakeGreeting, echo("LOGIN ", "* BYE CMD\r\n", hangUp)),
			Config{Auth: AuthLogin}, measure.Connection},
		{"plain base64 echoed", fake(saslGreeting, echo("AUTHENTICATE ", "%[1]s NO [AUTHENTICATIONFAILED] you sent CMD\r\n", reply)),
			Config{Auth: AuthPlain}, measure.Auth},
		{"malformed reply with the password", fake(fakeGreeting, echo("LOGIN ", "%[1]s WHAT? CMD\r\n", reply)),
			Config{Auth: AuthLogin}, measure.Protocol},
		{"hang-up after LOGIN", fake(fakeGreeting, echo("LOGIN ", "", hangUp)), Config{Auth: AuthLogin}, measure.Connection},
		{"stall after LOGIN", fake(fakeGreeting, echo("LOGIN ", "", stall)), Config{Auth: AuthLogin, Timeout: 300 * time.Millisecond}, measure.Timeout},
		{"connection refused", func(*testing.T) string { return refused }, Config{}, measure.Connection},
		{"untrusted certificate, implicit", func(*testing.T) string { return mt.tlsAddr },
			Config{TLS: TLSImplicit, TLSConfig: &tls.Config{}}, measure.TLS},
		{"untrusted certificate, starttls", func(*testing.T) string { return mt.addr },
			Config{TLS: TLSStartTLS, TLSConfig: &tls.Config{}}, measure.TLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			cfg := tt.cfg
			cfg.Address, cfg.Observer = tt.addr(t), rec
			if cfg.Timeout == 0 {
				cfg.Timeout = 5 * time.Second
			}
			c, err := Connect(context.Background(), cfg, testUser, wrong)
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

// TestRedactChains feeds redact chains where the password sits below the
// top (behind a wrapper that does not print it, or in one branch of a
// multi-error) and checks that no link keeps it while errors.Is, errors.As
// and measure.Classify still see what they saw before.
func TestRedactChains(t *testing.T) {
	const user, pw = "bob", "hunter2-Secret"
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name   string
		err    error
		is     []error
		scrubs bool // the result must not be err itself
	}{
		{"clean net error kept whole", refused, []error{syscall.ECONNREFUSED}, false},
		{"hidden behind an opaque wrapper", &opaqueError{"login failed", fmt.Errorf("server said %s: %w", pw, io.ErrUnexpectedEOF)},
			[]error{io.ErrUnexpectedEOF}, true},
		{"one branch of a join", errors.Join(refused, errors.New("echo "+pw)), []error{syscall.ECONNREFUSED}, true},
		{"join under a wrapper", fmt.Errorf("x: %w", errors.Join(os.ErrDeadlineExceeded, &opaqueError{"y", errors.New(pw)})),
			[]error{measure.ErrTimeout}, true},
		{"protocol error text", fmt.Errorf("x: %w", &measure.ProtocolError{Op: "LOGIN", Reply: "NO " + pw}), nil, true},
		{"tls", &measure.TLSError{Op: "TLS handshake", Err: errors.New("bad " + pw)}, nil, true},
		{"base64 of the PLAIN blob", errors.New("sent " + base64.StdEncoding.EncodeToString([]byte("\x00"+user+"\x00"+pw))), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact(tt.err, secretsOf(user, pw)...)
			if got == nil {
				t.Fatal("redact returned nil")
			}
			if (got != tt.err) != tt.scrubs {
				t.Errorf("redact replaced the error: %v, want %v", got != tt.err, tt.scrubs)
			}
			testutil.CheckNoSecret(t, got, nil, user, pw)
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
				if !errors.As(got, &gpe) || gpe.Op != pe.Op || gpe.Reply != "NO "+measure.RedactedMask {
					t.Errorf("ProtocolError %+v lost, got %+v", pe, gpe)
				}
			}
		})
	}
}
