package demo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
	"github.com/mailbench/mailbench/internal/gosmtp"
	"github.com/mailbench/mailbench/workload"
)

// testTimeout bounds every network step of a test.
const testTimeout = 5 * time.Second

var testUsers = []workload.User{
	{Login: "user1", Password: "secret-one"},
	{Login: "user2", Password: "secret-two", Address: "second@example.test"},
}

// address is u's recipient address as Start fills it in.
func address(u workload.User) string {
	if u.Address != "" {
		return u.Address
	}
	return u.Login + "@" + DefaultLocalDomain
}

// startTarget starts a target with testUsers (unless opts has users) and
// closes it at the end of the test.
func startTarget(t testing.TB, opts Options) *Target {
	t.Helper()
	if opts.Users == nil {
		opts.Users = testUsers
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tg, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	t.Cleanup(func() {
		if err := tg.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return tg
}

// imapLogin connects and logs in; a watchdog closes the client after
// testTimeout so that no test can hang on a silent server.
func imapLogin(t *testing.T, addr, login, password string, tlsConfig *tls.Config) *imapclient.Client {
	t.Helper()
	opts := &imapclient.Options{Dialer: &net.Dialer{Timeout: testTimeout}, TLSConfig: tlsConfig}
	var (
		c   *imapclient.Client
		err error
	)
	if tlsConfig != nil {
		c, err = imapclient.DialStartTLS(addr, opts)
	} else {
		c, err = imapclient.DialInsecure(addr, opts)
	}
	if err != nil {
		t.Fatalf("dial IMAP: %v", err)
	}
	watchdog := time.AfterFunc(testTimeout, func() { c.Close() })
	t.Cleanup(func() { watchdog.Stop(); c.Close() })
	if err := c.Login(login, password).Wait(); err != nil {
		t.Fatalf("Login(%q).Wait() = %v", login, err)
	}
	return c
}

// inbox returns the full text of every message in login's INBOX.
func inbox(t *testing.T, tg *Target, u workload.User) [][]byte {
	t.Helper()
	c := imapLogin(t, tg.IMAPAddr(), u.Login, u.Password, nil)
	defer c.Logout()
	sel, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		t.Fatalf("Select(INBOX) = %v", err)
	}
	if sel.NumMessages == 0 {
		return nil
	}
	section := &imap.FetchItemBodySection{Peek: true}
	msgs, err := c.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{section}}).Collect()
	if err != nil {
		t.Fatalf("Fetch(1:*) = %v", err)
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.FindBodySection(section)
	}
	return out
}

// sendMail submits msg over SMTP and returns the first error.
func sendMail(addr, from string, to []string, msg []byte, tlsConfig *tls.Config) error {
	conn, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		return err
	}
	var c *smtp.Client
	if tlsConfig != nil {
		c, err = smtp.NewClientStartTLS(conn, tlsConfig)
		if err != nil {
			conn.Close()
			return err
		}
	} else {
		c = smtp.NewClient(conn)
	}
	c.CommandTimeout, c.SubmissionTimeout = testTimeout, testTimeout
	defer c.Close()
	if err := c.Hello("client.test"); err != nil {
		return err
	}
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// testMessage returns a small CRLF message whose body identifies it.
func testMessage(id string) []byte {
	return fmt.Appendf(nil, "From: sender@client.test\r\nTo: someone\r\nSubject: test %s\r\nMessage-Id: <%s@client.test>\r\n\r\nHello, this is message %s.\r\nSecond line 0123456789.\r\n", id, id, id)
}

// splitMessage splits a message into header and body at the first blank line.
func splitMessage(t *testing.T, msg []byte) (header, body []byte) {
	t.Helper()
	i := bytes.Index(msg, []byte("\r\n\r\n"))
	if i < 0 {
		t.Fatalf("message has no header/body separator: %q", msg)
	}
	return msg[:i+2], msg[i+4:]
}

// checkDelivered asserts that got is want with header lines prepended and
// that those lines are exactly one folded Received field.
func checkDelivered(t *testing.T, got, want []byte) {
	t.Helper()
	if !bytes.HasSuffix(got, want) {
		t.Fatalf("delivered message does not end with the submitted one:\ngot  %q\nwant suffix %q", got, want)
	}
	prefix := string(got[:len(got)-len(want)])
	if !strings.HasPrefix(prefix, "Received: ") || !strings.HasSuffix(prefix, "\r\n") {
		t.Fatalf("prepended text %q is not a Received header", prefix)
	}
	for i, line := range strings.Split(strings.TrimSuffix(prefix, "\r\n"), "\r\n") {
		if i > 0 && !strings.HasPrefix(line, "\t") {
			t.Fatalf("prepended line %d %q is neither the Received field nor its continuation", i, line)
		}
	}
}

// waitFor polls cond every few milliseconds until it holds or testTimeout
// passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// relayServer is a throwaway go-smtp server standing in for the sink. Its
// reply to DATA is chosen by reject (nil accepts) and it can hold DATA
// until release is closed.
type relayServer struct {
	addr string

	mu       sync.Mutex
	messages []relayed
	attempts int

	reject  func(attempt int) error // called per DATA; nil accepts
	rcptErr func(rcpt string) error // called per RCPT; nil accepts
	hold    chan struct{}           // when not nil, DATA waits for it to close
	held    int                     // DATAs waiting on hold now

	tlsConfig *tls.Config // when not nil, offer STARTTLS, or implicit TLS with implicit
	implicit  bool
	conns     int // connections accepted
	ended     int // sessions ended (QUIT, or the connection closed)

	// perConn > 0: after that many messages on a connection, the next
	// MAIL ends it, with a 421 reply (end421) or by closing it unanswered.
	perConn int
	end421  bool

	// wakeDelay > 0: every read on an accepted connection waits that long
	// first, as a busy host's session is woken late for each batch of
	// commands that arrives.
	wakeDelay time.Duration
}

// lateConn is a connection whose reads each wait delay first.
type lateConn struct {
	net.Conn
	delay time.Duration
}

func (c lateConn) Read(p []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Read(p)
}

// countingListener counts accepted connections in rs.conns.
type countingListener struct {
	net.Listener
	rs *relayServer
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.rs.mu.Lock()
		l.rs.conns++
		l.rs.mu.Unlock()
		if l.rs.wakeDelay > 0 {
			c = lateConn{c, l.rs.wakeDelay}
		}
	}
	return c, err
}

type relayed struct {
	from string
	to   []string
	msg  []byte
	tls  bool // the message came over TLS
}

func newRelayServer(t testing.TB, configure func(*relayServer)) *relayServer {
	t.Helper()
	rs := &relayServer{}
	if configure != nil {
		configure(rs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs.addr = ln.Addr().String()
	ln = countingListener{ln, rs}
	if rs.implicit {
		ln = tls.NewListener(ln, rs.tlsConfig)
	}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &relaySession{rs: rs, conn: c}, nil
	}))
	if !rs.implicit {
		s.TLSConfig = rs.tlsConfig
	}
	s.ReadTimeout, s.WriteTimeout = testTimeout, testTimeout
	s.ErrorLog = discardLogger{}
	go s.Serve(ln)
	t.Cleanup(func() {
		if rs.hold != nil {
			select {
			case <-rs.hold:
			default:
				close(rs.hold)
			}
		}
		s.Close()
	})
	return rs
}

func (rs *relayServer) received() []relayed {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]relayed(nil), rs.messages...)
}

type relaySession struct {
	rs   *relayServer
	conn *smtp.Conn
	from string
	to   []string
	n    int // messages accepted on this connection
}

func (s *relaySession) Reset() { s.from, s.to = "", nil }
func (s *relaySession) Logout() error {
	s.rs.mu.Lock()
	s.rs.ended++
	s.rs.mu.Unlock()
	return nil
}
func (s *relaySession) Mail(from string, _ *smtp.MailOptions) error {
	if s.rs.perConn > 0 && s.n >= s.rs.perConn {
		if s.rs.end421 {
			return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 4, 2}, Message: "idle too long, closing"}
		}
		s.conn.Close()
		return errors.New("closed")
	}
	s.from = from
	return nil
}
func (s *relaySession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.rs.rcptErr != nil {
		if err := s.rs.rcptErr(to); err != nil {
			return err
		}
	}
	s.to = append(s.to, to)
	return nil
}
func (s *relaySession) Data(r io.Reader) error {
	msg, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.rs.hold != nil {
		s.rs.mu.Lock()
		s.rs.held++
		s.rs.mu.Unlock()
		<-s.rs.hold
		s.rs.mu.Lock()
		s.rs.held--
		s.rs.mu.Unlock()
	}
	s.rs.mu.Lock()
	defer s.rs.mu.Unlock()
	s.rs.attempts++
	if s.rs.reject != nil {
		if err := s.rs.reject(s.rs.attempts); err != nil {
			return err
		}
	}
	_, overTLS := s.conn.TLSConnectionState()
	s.rs.messages = append(s.rs.messages, relayed{from: s.from, to: s.to, msg: msg, tls: overTLS})
	s.n++
	return nil
}

// counts returns the connections accepted and the sessions ended so far.
func (rs *relayServer) counts() (conns, ended int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.conns, rs.ended
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}

// rawIMAP is a line-level IMAP connection for commands imapclient lacks
// (LSUB) and for observing a silent server.
type rawIMAP struct {
	conn net.Conn
	r    *bufio.Reader
	tag  int
}

func dialRaw(t *testing.T, addr string) *rawIMAP {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawIMAP{conn: conn, r: bufio.NewReader(conn)}
}

// readLine reads one line within d.
func (c *rawIMAP) readLine(d time.Duration) (string, error) {
	c.conn.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// cmd sends a command and returns the untagged lines and the tagged status
// line, each read within d.
func (c *rawIMAP) cmd(command string, d time.Duration) (untagged []string, status string, err error) {
	c.tag++
	tag := fmt.Sprintf("t%d", c.tag)
	c.conn.SetWriteDeadline(time.Now().Add(d))
	if _, err := fmt.Fprintf(c.conn, "%s %s\r\n", tag, command); err != nil {
		return nil, "", err
	}
	for {
		line, err := c.readLine(d)
		if err != nil {
			return untagged, "", err
		}
		if strings.HasPrefix(line, tag+" ") {
			return untagged, strings.TrimPrefix(line, tag+" "), nil
		}
		untagged = append(untagged, line)
	}
}
