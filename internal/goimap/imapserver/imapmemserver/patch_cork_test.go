package imapmemserver_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"
)

// server-cork.patch: a command's responses leave the server in one write,
// not one per line; what the client must see before it can go on (a
// continuation request, IDLE's updates, a BYE before the close) still
// leaves at once. The client here is a script on a raw connection, each
// wait bounded, so that a response left in the server's buffer fails the
// test instead of hanging it.

// writeCountingListener counts the writes of every connection it accepts.
type writeCountingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *writeCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &writeCountingConn{Conn: c, writes: &l.writes}, nil
}

type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1) // before the write: a client that saw the bytes sees the count
	return c.Conn.Write(p)
}

func startCorkServer(t *testing.T) *writeCountingListener {
	t.Helper()
	mem := imapmemserver.New()
	user := imapmemserver.NewUser("u", "p")
	if err := user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	mem.AddUser(user)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &writeCountingListener{Listener: ln}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l
}

// scriptClient is the test's IMAP client: lines written as given, lines
// read with a deadline.
type scriptClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialScript(t *testing.T, l net.Listener) *scriptClient {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sc := &scriptClient{t: t, c: c, br: bufio.NewReader(c)}
	if greeting := sc.line(); !strings.HasPrefix(greeting, "* OK") {
		t.Fatalf("greeting %q", greeting)
	}
	return sc
}

// line reads one line; the server has 5 s to send it.
func (sc *scriptClient) line() string {
	sc.t.Helper()
	sc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := sc.br.ReadString('\n')
	if err != nil {
		sc.t.Fatalf("reading a line (so far %q): %v", s, err)
	}
	return strings.TrimSuffix(s, "\r\n")
}

func (sc *scriptClient) send(s string) {
	sc.t.Helper()
	if _, err := sc.c.Write([]byte(s)); err != nil {
		sc.t.Fatal(err)
	}
}

// command sends a command and returns its response lines, the tagged one last.
func (sc *scriptClient) command(tag, cmd string) []string {
	sc.t.Helper()
	sc.send(tag + " " + cmd + "\r\n")
	var lines []string
	for {
		l := sc.line()
		lines = append(lines, l)
		if strings.HasPrefix(l, tag+" ") {
			if !strings.HasPrefix(l, tag+" OK") {
				sc.t.Fatalf("%s: %q", cmd, lines)
			}
			return lines
		}
	}
}

// appendMessage APPENDs msg to INBOX with a synchronizing literal: it
// waits for the continuation request (which must leave at once, whatever
// the cork) and for the tagged OK.
func (sc *scriptClient) appendMessage(tag, msg string) {
	sc.t.Helper()
	sc.send(fmt.Sprintf("%s APPEND INBOX {%d}\r\n", tag, len(msg)))
	if cont := sc.line(); !strings.HasPrefix(cont, "+") {
		sc.t.Fatalf("APPEND: %q, want a continuation request", cont)
	}
	sc.send(msg + "\r\n")
	for {
		line := sc.line()
		if strings.HasPrefix(line, tag+" ") {
			if !strings.HasPrefix(line, tag+" OK") {
				sc.t.Fatalf("APPEND: %q", line)
			}
			return
		}
	}
}

func TestPatchServerCorkOneWritePerCommand(t *testing.T) {
	l := startCorkServer(t)
	sc := dialScript(t, l)
	sc.command("a", "LOGIN u p")

	// APPEND with a synchronizing literal: the continuation request must
	// leave while the command is corked, or the client never sends.
	const messages = 20
	for i := range messages {
		sc.appendMessage(fmt.Sprintf("b%d", i), fmt.Sprintf("Subject: %d\r\n\r\nbody %d\r\n", i, i))
	}

	for _, tc := range []struct {
		cmd       string
		wantLines int
	}{
		{"SELECT INBOX", 7}, // FLAGS, EXISTS, RECENT, UIDVALIDITY, UIDNEXT, PERMANENTFLAGS, tagged
		{"FETCH 1:20 (UID FLAGS)", messages + 1},
		{"NOOP", 1},
		{"STORE 1:5 +FLAGS (\\Seen)", 6},
	} {
		before := l.writes.Load()
		lines := sc.command("c", tc.cmd)
		writes := l.writes.Load() - before
		if len(lines) < tc.wantLines {
			t.Errorf("%s: %d lines %q, want at least %d", tc.cmd, len(lines), lines, tc.wantLines)
		}
		if writes != 1 {
			t.Errorf("%s: %d lines in %d writes, want 1 write", tc.cmd, len(lines), writes)
		}
	}
	sc.send("z LOGOUT\r\n")
	if bye := sc.line(); !strings.HasPrefix(bye, "* BYE") {
		t.Fatalf("LOGOUT: %q, want BYE", bye)
	}
	if ok := sc.line(); !strings.HasPrefix(ok, "z OK") {
		t.Fatalf("LOGOUT: %q, want z OK", ok)
	}
}

func TestPatchServerCorkIdleUpdatesLeaveAtOnce(t *testing.T) {
	l := startCorkServer(t)
	idler := dialScript(t, l)
	idler.command("a", "LOGIN u p")
	idler.command("b", "SELECT INBOX")
	idler.send("c IDLE\r\n")
	if cont := idler.line(); !strings.HasPrefix(cont, "+") {
		t.Fatalf("IDLE: %q, want a continuation request", cont)
	}

	other := dialScript(t, l)
	other.command("a", "LOGIN u p")
	other.appendMessage("b", "Subject: x\r\n\r\n")

	// The update is written by the session while the connection waits
	// for DONE: nothing else would flush it.
	if update := idler.line(); update != "* 1 EXISTS" {
		t.Fatalf("while idling: %q, want * 1 EXISTS", update)
	}
	idler.send("DONE\r\n")
	for {
		line := idler.line()
		if strings.HasPrefix(line, "c ") {
			if !strings.HasPrefix(line, "c OK") {
				t.Fatalf("IDLE: %q", line)
			}
			break
		}
	}
}

func TestPatchServerCorkAuthenticateChallenge(t *testing.T) {
	l := startCorkServer(t)
	sc := dialScript(t, l)
	// No initial response: the server sends an empty challenge and waits.
	sc.send("a AUTHENTICATE PLAIN\r\n")
	if cont := sc.line(); !strings.HasPrefix(cont, "+") {
		t.Fatalf("AUTHENTICATE: %q, want a continuation request", cont)
	}
	sc.send(base64.StdEncoding.EncodeToString([]byte("\x00u\x00p")) + "\r\n")
	if ok := sc.line(); !strings.HasPrefix(ok, "a OK") {
		t.Fatalf("AUTHENTICATE: %q, want a OK", ok)
	}
}

func TestPatchServerCorkByeBeforeClose(t *testing.T) {
	l := startCorkServer(t)
	sc := dialScript(t, l)
	// An unknown command before authentication ends the connection: the
	// tagged BAD and the BYE both arrive before the close.
	sc.send("a FOO\r\n")
	if bad := sc.line(); !strings.HasPrefix(bad, "a BAD") {
		t.Fatalf("unknown command: %q, want a BAD", bad)
	}
	if bye := sc.line(); !strings.HasPrefix(bye, "* BYE") {
		t.Fatalf("unknown command: %q, want * BYE", bye)
	}
	sc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if rest, err := sc.br.ReadString('\n'); err == nil {
		t.Fatalf("after BYE: %q, want the connection closed", rest)
	}
}

// TestPatchServerCorkEveryCommandAnswered: whatever the command, its
// responses (the tagged one last) arrive, in one write, once it is
// answered; errors (NO, BAD) included.
func TestPatchServerCorkEveryCommandAnswered(t *testing.T) {
	l := startCorkServer(t)
	sc := dialScript(t, l)
	sc.command("a", "LOGIN u p")
	sc.appendMessage("b", "Subject: x\r\n\r\n")
	for i, cmd := range []string{
		"CAPABILITY", "NOOP", "CHECK", "ENABLE IMAP4rev2", "CREATE Archive", "LIST \"\" *", "LSUB \"\" *",
		"STATUS INBOX (MESSAGES UIDNEXT)", "SUBSCRIBE Archive", "UNSUBSCRIBE Archive", "EXAMINE INBOX",
		"SELECT INBOX", "FETCH 1:* (UID FLAGS ENVELOPE BODY.PEEK[HEADER])", "UID FETCH 1:* (FLAGS)",
		"SEARCH ALL", "UID SEARCH ALL", "STORE 1 +FLAGS (\\Flagged)", "COPY 1 Archive", "UID COPY 1 Archive",
		"FETCH 99 (FLAGS)", "SELECT Nowhere", "SELECT INBOX", "EXPUNGE", "UNSELECT", "RENAME Archive Old",
		"DELETE Old", "FROB", "FETCH", "LIST",
	} {
		tag := fmt.Sprintf("t%d", i)
		before := l.writes.Load()
		sc.send(tag + " " + cmd + "\r\n")
		var lines []string
		for {
			line := sc.line()
			lines = append(lines, line)
			if strings.HasPrefix(line, tag+" ") {
				break
			}
		}
		if writes := l.writes.Load() - before; writes != 1 {
			t.Errorf("%s: %q in %d writes, want 1", cmd, lines, writes)
		}
	}
}
