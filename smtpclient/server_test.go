package smtpclient

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"

	"github.com/emersion/go-sasl"

	smtp "github.com/mailbench/mailbench/internal/gosmtp"

	"github.com/mailbench/mailbench/internal/testing/testcert"
	"github.com/mailbench/mailbench/measure"
)

const (
	testUser     = "user1@example.test"
	testPassword = "s3cret-Pa55word"
)

// received is one message the test server accepted.
type received struct {
	from string
	to   []string
	data []byte
}

// backend is an in-process go-smtp backend with scripted refusals:
// RCPT to nobody*@ gets 550, MAIL from reject@ gets 553, DATA from spam@
// gets 554 at the final reply, AUTH accepts testUser/testPassword only and
// its refusal echoes the password (so the client must redact it).
type backend struct {
	requireAuth bool

	mu   sync.Mutex
	msgs []received
}

func (be *backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{be: be}, nil }

func (be *backend) messages() []received {
	be.mu.Lock()
	defer be.mu.Unlock()
	return append([]received(nil), be.msgs...)
}

type session struct {
	be     *backend
	authed bool
	from   string
	to     []string
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain, sasl.Login} }

func (s *session) Auth(mech string) (sasl.Server, error) {
	check := func(user, pass string) error {
		if user != testUser || pass != testPassword {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8},
				Message: "bad credentials " + user + " " + pass}
		}
		s.authed = true
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

// loginServer is the server side of the LOGIN mechanism (go-sasl has only
// the client side).
type loginServer struct {
	check func(user, pass string) error
	step  int
	user  string
}

func (l *loginServer) Next(resp []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if resp != nil {
			l.user = string(resp)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 2:
		l.user = string(resp)
		return []byte("Password:"), false, nil
	default:
		return nil, true, l.check(l.user, string(resp))
	}
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.be.requireAuth && !s.authed {
		return smtp.ErrAuthRequired
	}
	if strings.HasPrefix(from, "reject@") {
		return &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "sender rejected"}
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasPrefix(to, "nobody") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if strings.HasPrefix(s.from, "spam@") {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "message refused as spam"}
	}
	s.be.mu.Lock()
	s.be.msgs = append(s.be.msgs, received{from: s.from, to: append([]string(nil), s.to...), data: data})
	s.be.mu.Unlock()
	return nil
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }

// startServer runs a go-smtp server for be on 127.0.0.1:0 and returns its
// address. tlsCfg enables STARTTLS (mode starttls) or wraps the listener
// (mode implicit).
func startServer(t *testing.T, be *backend, mode TLSMode, tlsCfg *tls.Config) string {
	t.Helper()
	return startServerOn(t, be, mode, tlsCfg, nil)
}

// startServerOn is startServer with the TCP listener wrapped by wrap (nil:
// as it is), under TLS.
func startServerOn(t *testing.T, be *backend, mode TLSMode, tlsCfg *tls.Config, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	s := smtp.NewServer(be)
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	s.ErrorLog = log.New(io.Discard, "", 0)
	s.ReadTimeout = 10 * time.Second
	s.WriteTimeout = 10 * time.Second
	switch mode {
	case TLSStartTLS:
		s.TLSConfig = tlsCfg
	case TLSImplicit:
		ln = tls.NewListener(ln, tlsCfg)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// testCert returns a server config with a fresh self-signed certificate
// for 127.0.0.1 and a client config that trusts it.
func testCert(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	server, pool := testcert.New(t, "127.0.0.1")
	return server, &tls.Config{RootCAs: pool}
}

// scriptedServer accepts connections on 127.0.0.1:0 and hands each to
// handle. At cleanup the connections are closed and done is closed, so
// handlers may block on reads or on done.
func scriptedServer(t *testing.T, handle func(c net.Conn, done <-chan struct{})) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); handle(c, done) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(done)
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// stall says where a scripted SMTP server goes silent.
type stall int

const (
	stallNever       stall = iota
	stallBanner            // accepts TCP, never sends the banner
	stallDataCommand       // never answers DATA
	stallFinalReply        // reads the body, never sends the final reply
	stallBodyUnread        // answers 354, then stops reading
)

// stallingSMTP is a minimal hand-written SMTP server that goes silent at
// the given point.
func stallingSMTP(at stall) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, done <-chan struct{}) {
		if at == stallBanner {
			io.Copy(io.Discard, c)
			return
		}
		br := bufio.NewReader(c)
		io.WriteString(c, "220 localhost ESMTP\r\n")
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			cmd := strings.ToUpper(strings.TrimSpace(line))
			switch {
			case strings.HasPrefix(cmd, "EHLO"):
				io.WriteString(c, "250-localhost\r\n250 PIPELINING\r\n")
			case cmd == "DATA":
				switch at {
				case stallDataCommand:
					io.Copy(io.Discard, br)
					return
				case stallBodyUnread:
					io.WriteString(c, "354 go ahead\r\n")
					<-done // hold the connection, read nothing
					return
				}
				io.WriteString(c, "354 go ahead\r\n")
				for {
					l, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if l == ".\r\n" {
						break
					}
				}
				if at == stallFinalReply {
					io.Copy(io.Discard, br)
					return
				}
				io.WriteString(c, "250 2.0.0 queued\r\n")
			case cmd == "QUIT":
				io.WriteString(c, "221 bye\r\n")
				return
			default:
				io.WriteString(c, "250 ok\r\n")
			}
		}
	}
}

// recorder is a measure.Observer that keeps every observation.
type recorder struct{ testutil.ObservationLog }

// only returns the single observation recorded, failing otherwise.
func (r *recorder) only(t *testing.T, f measure.Function) measure.Observation {
	t.Helper()
	var got []measure.Observation
	for _, o := range r.All() {
		if o.Function == f {
			got = append(got, o)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d %q observations, want 1: %+v", len(got), f, r.All())
	}
	return got[0]
}

func errorsAsProtocol(err error) (*measure.ProtocolError, bool) {
	var pe *measure.ProtocolError
	ok := errors.As(err, &pe)
	return pe, ok
}
