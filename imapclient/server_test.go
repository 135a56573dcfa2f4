package imapclient

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

	"github.com/mailbench/mailbench/internal/testing/testutil"

	imap "github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
	"github.com/mailbench/mailbench/internal/testing/testcert"
	"github.com/mailbench/mailbench/measure"
)

const (
	testUser     = "alice"
	testPassword = "Pw-7f3a9c-secret"
)

// recorder is a measure.Observer that keeps every observation.
type recorder struct{ testutil.ObservationLog }

// last returns the most recent observation, failing the test if there is none.
func (r *recorder) last(t *testing.T) measure.Observation {
	t.Helper()
	obs := r.All()
	if len(obs) == 0 {
		t.Fatal("no observation recorded")
	}
	return obs[len(obs)-1]
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {}

// testMessage renders a small message with mailbench trace headers.
func testMessage(id string, sent time.Time, body string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: sender@remote.test\r\nTo: %s@example.test\r\nSubject: test %s\r\n", testUser, id)
	fmt.Fprintf(&b, "Date: %s\r\nMessage-Id: <%s@mailbench>\r\n", sent.Format(time.RFC1123Z), id)
	fmt.Fprintf(&b, "%s: %s\r\n%s: %s\r\n", HeaderID, id, HeaderSent, sent.Format(time.RFC3339Nano))
	fmt.Fprintf(&b, "%s: %s\r\n\r\n%s", HeaderSum, msgsum.BodySum([]byte(body)), body)
	return b.Bytes()
}

// memTarget is an in-process imapserver + imapmemserver on 127.0.0.1.
type memTarget struct {
	addr    string // plain and STARTTLS
	tlsAddr string // implicit TLS
	client  *tls.Config
}

// startMem starts the in-process server with one user whose INBOX holds
// inboxMessages messages and who has the folders Sent and Archive
// (Archive subscribed).
func startMem(t *testing.T, inboxMessages int) *memTarget {
	t.Helper()
	return startMemAs(t, inboxMessages, testutil.TLSBehaviour{Name: "Go"})
}

// startMemAs is startMem with the server's sockets and TLS as b has them.
func startMemAs(t *testing.T, inboxMessages int, b testutil.TLSBehaviour) *memTarget {
	t.Helper()
	mem := imapmemserver.New()
	u := imapmemserver.NewUser(testUser, testPassword)
	for _, name := range []string{"INBOX", "Sent", "Archive"} {
		if err := u.Create(name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Subscribe("Archive"); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	for i := 1; i <= inboxMessages; i++ {
		msg := testMessage(fmt.Sprintf("seed-%d", i), base.Add(time.Duration(i)*time.Second), strings.Repeat("line\r\n", i))
		if _, err := u.Append("INBOX", literal{bytes.NewReader(msg), int64(len(msg))}, &imap.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mem.AddUser(u)

	serverTLS, clientTLS := testCerts(t)
	if b.Server != nil {
		serverTLS = serverTLS.Clone()
		b.Server(serverTLS)
	}
	newServer := func(starttls bool) *imapserver.Server {
		opts := &imapserver.Options{
			NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
				return mem.NewSession(), nil, nil
			},
			Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}},
			InsecureAuth: true,
			Logger:       quietLogger{},
		}
		if starttls {
			opts.TLSConfig = serverTLS
		}
		return imapserver.New(opts)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := newServer(true), newServer(false)
	go s1.Serve(b.Listener(ln))
	go s2.Serve(tls.NewListener(b.Listener(tln), serverTLS))
	t.Cleanup(func() { s1.Close(); s2.Close() })
	return &memTarget{addr: ln.Addr().String(), tlsAddr: tln.Addr().String(), client: clientTLS}
}

type literal struct {
	*bytes.Reader
	n int64
}

func (l literal) Size() int64 { return l.n }

// testCerts returns a server config with a fresh self-signed certificate
// for 127.0.0.1 and a client config that trusts it and caches sessions.
func testCerts(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	server, pool := testcert.New(t, "127.0.0.1")
	// P-256 only, as Cyrus' default tls_eccurve (prime256v1): the server
	// answers Go's ClientHello (X25519MLKEM768 and X25519 key shares) with a
	// HelloRetryRequest, so every TLS test here goes through one.
	server.CurvePreferences = []tls.CurveID{tls.CurveP256}
	return server, &tls.Config{RootCAs: pool, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
}

// fakeServer is a scripted IMAP server on 127.0.0.1 for failure cases.
type fakeServer struct {
	addr     string
	mu       sync.Mutex
	commands []string // command lines received (tag stripped), all connections
}

// fakeAction is what the fake server does after reading one command.
type fakeAction int

const (
	reply  fakeAction = iota // write the response (with %[1]s replaced by the tag) and go on
	stall                    // write the response, then read and ignore everything
	hangUp                   // write the response, then close the connection
)

// fakeScript answers one command line (tag stripped, e.g. "SELECT INBOX").
type fakeScript func(cmd string) (response string, action fakeAction)

// startFake serves greeting (may be "" to stay silent) and then script on
// every connection. Connections and goroutines end with the test.
func startFake(t *testing.T, greeting string, script fakeScript) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeServer{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var connsMu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		connsMu.Lock()
		for _, c := range conns {
			c.Close()
		}
		connsMu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connsMu.Lock()
			conns = append(conns, c)
			connsMu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				fs.serve(c, greeting, script)
			}()
		}
	}()
	return fs
}

func (fs *fakeServer) serve(c net.Conn, greeting string, script fakeScript) {
	c.SetDeadline(time.Now().Add(10 * time.Second)) // bound the test
	br := bufio.NewReader(c)
	if greeting == "" {
		io.Copy(io.Discard, br)
		return
	}
	c.Write([]byte(greeting))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		tag, cmd, _ := strings.Cut(line, " ")
		if n, ok := literalSuffix([]byte(line)); ok {
			// APPEND literal: synchronising or not, read it.
			if !strings.HasSuffix(line, "+}") {
				c.Write([]byte("+ go ahead\r\n"))
			}
			buf := make([]byte, n)
			if _, err := io.ReadFull(br, buf); err != nil {
				return
			}
			br.ReadString('\n')
		}
		fs.mu.Lock()
		fs.commands = append(fs.commands, cmd)
		fs.mu.Unlock()
		resp, action := script(cmd)
		if resp != "" {
			c.Write([]byte(strings.ReplaceAll(resp, "%[1]s", tag)))
		}
		switch action {
		case stall:
			io.Copy(io.Discard, br)
			return
		case hangUp:
			return
		}
	}
}

func (fs *fakeServer) seen() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]string(nil), fs.commands...)
}

const fakeGreeting = "* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] fake ready\r\n"

// loginOK is a script prefix: LOGIN and CAPABILITY succeed, next handles the rest.
func loginOK(next fakeScript) fakeScript {
	return func(cmd string) (string, fakeAction) {
		switch {
		case strings.HasPrefix(cmd, "LOGIN "):
			return "%[1]s OK [CAPABILITY IMAP4rev1] logged in\r\n", reply
		case cmd == "CAPABILITY":
			return "* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n%[1]s OK done\r\n", reply
		case cmd == "LOGOUT":
			return "* BYE bye\r\n%[1]s OK bye\r\n", hangUp
		}
		return next(cmd)
	}
}

// A server that refuses the connection at its greeting is reported with
// its own reply, on every connection: go-imap's WaitGreeting lost it
// about half of the time ("connection closed before greeting", reported
// as an unexpected response; go-imap greeting-race.patch).
func TestGreetingRefusalKeepsServerReply(t *testing.T) {
	for _, greeting := range []string{"* BYE Too many connections from 127.0.0.1\r\n", "* NO [UNAVAILABLE] Maintenance\r\n"} {
		fs := startFake(t, greeting, func(string) (string, fakeAction) { return "", hangUp })
		want := "BYE Too many connections from 127.0.0.1"
		if strings.HasPrefix(greeting, "* NO") {
			want = "NO [UNAVAILABLE] Maintenance"
		}
		for range 20 {
			_, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 5 * time.Second, Observer: measure.Discard}, "user", "secret-password")
			var pe *measure.ProtocolError
			if !errors.As(err, &pe) || pe.Op != "greeting" || pe.Reply != want {
				t.Fatalf("greeting %q: Connect = %v, want the protocol error %q at the greeting", greeting, err, want)
			}
		}
	}
}
