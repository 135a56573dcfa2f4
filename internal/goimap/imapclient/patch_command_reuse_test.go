package imapclient_test

// Tests of mailbench's command-reuse.patch and text-skip.patch
// (internal/goimap/PATCHES.md): the client's one command encoder takes
// each command's options from the capabilities and enabled extensions in
// force when the command begins, however they changed before it; a
// status response's text reaches whoever reads it (a NO's or BAD's error,
// the greeting's) though an OK's is no longer kept; and a command costs
// fewer allocations.

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

// capsServer answers as a server whose capabilities grow: LITERAL+ and
// UTF8=ACCEPT are announced only in LOGIN's tagged OK. It records every
// command line the client sends (literals' bytes are not lines).
type capsServer struct {
	mu    sync.Mutex
	lines []string
}

func (s *capsServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

func (s *capsServer) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(lines ...string) bool {
		for _, l := range lines {
			if _, err := io.WriteString(conn, l+"\r\n"); err != nil {
				return false
			}
		}
		return true
	}
	send("* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] caps server ready")
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		s.mu.Lock()
		s.lines = append(s.lines, line)
		s.mu.Unlock()
		tag, rest, _ := strings.Cut(line, " ")
		cmd, _, _ := strings.Cut(rest, " ")
		var ok bool
		switch strings.ToUpper(cmd) {
		case "LOGIN":
			ok = send(tag + " OK [CAPABILITY IMAP4rev1 LITERAL+ ENABLE UTF8=ACCEPT] Logged in")
		case "ENABLE":
			ok = send("* ENABLED UTF8=ACCEPT", tag+" OK Enabled")
		case "APPEND":
			// "{5}" waits for "+", "{5+}" does not; either way the literal
			// (5 bytes) and the command's CRLF follow.
			if strings.HasSuffix(line, "{5}") {
				send("+ go ahead")
			} else if !strings.HasSuffix(line, "{5+}") {
				ok = send(tag + " BAD unexpected literal")
				break
			}
			buf := make([]byte, 7)
			if _, err := io.ReadFull(br, buf); err != nil {
				return
			}
			ok = send("* OK [ALERT] an untagged OK after the greeting", tag+" OK [APPENDUID 1 1] Append completed.")
		case "DELETE":
			ok = send(tag + " NO [NONEXISTENT] Mailbox doesn't exist: Entwürfe")
		case "NOOP":
			ok = send(tag + " OK NOOP completed (0.001 + 0.000 secs).")
		default:
			ok = send(tag + " OK " + cmd + " completed")
		}
		if !ok {
			return
		}
	}
}

func dialCapsServer(t *testing.T, s *capsServer) net.Conn {
	t.Helper()
	clientConn, conn := loopbackPair(t)
	go s.serve(conn)
	return clientConn
}

func TestPatchCommandReuseFollowsCaps(t *testing.T) {
	for _, inCaller := range []bool{false, true} {
		s := &capsServer{}
		c := imapclient.New(dialCapsServer(t, s), &imapclient.Options{ReadInCaller: inCaller})
		appendHello := func() {
			t.Helper()
			cmd := c.Append("INBOX", 5, nil)
			if _, err := io.WriteString(cmd, "hello"); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		steps := []func() error{
			func() error { return c.Create("Entwürfe", nil).Wait() },
			func() error { appendHello(); return nil },
			func() error { return c.Login("user", "pass").Wait() },
			func() error { appendHello(); return nil },
			func() error { _, err := c.Enable(imap.CapUTF8Accept).Wait(); return err },
			func() error { return c.Create("Entwürfe", nil).Wait() },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("read in caller %v, step %d: %v", inCaller, i, err)
			}
		}
		// A NO keeps its text (text-skip.patch reads only OKs' without keeping).
		err := c.Delete("Entwürfe").Wait()
		var imapErr *imap.Error
		if !errors.As(err, &imapErr) || imapErr.Type != imap.StatusResponseTypeNo || imapErr.Code != "NONEXISTENT" ||
			imapErr.Text != "Mailbox doesn't exist: Entwürfe" {
			t.Errorf("read in caller %v: DELETE: %#v (%v), want the server's NO with its code and text", inCaller, imapErr, err)
		}
		if err := c.Noop().Wait(); err != nil {
			t.Fatal(err)
		}
		c.Close()

		var got []string
		for _, l := range s.seen() {
			_, rest, _ := strings.Cut(l, " ")
			got = append(got, rest)
		}
		want := []string{
			`CREATE "Entw&APw-rfe"`, // no UTF8=ACCEPT: modified UTF-7
			`APPEND INBOX {5}`,      // no LITERAL+: a synchronizing literal
			`LOGIN "user" "pass"`,   // the tagged OK brings LITERAL+ and UTF8=ACCEPT
			`APPEND INBOX {5+}`,     // LITERAL+ now
			`ENABLE UTF8=ACCEPT`,    //
			`CREATE "Entwürfe"`,     // UTF8=ACCEPT enabled: UTF-8 as it is
			`DELETE "Entwürfe"`,     //
			`NOOP`,                  //
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("read in caller %v: the client sent\n%s\nwant\n%s", inCaller, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// A greeting that refuses the connection keeps its text in the error
// (text-skip.patch), every time (greeting-race.patch: beta.8 returned
// "connection closed before greeting" about half of the time, whichever
// of two closed channels its select picked).
func TestPatchTextSkipGreetingText(t *testing.T) {
	for i := range 40 {
		greeting := []string{"* BYE Too many connections from 127.0.0.1", "* NO [UNAVAILABLE] Server shutting down"}[i%2]
		clientConn := scriptedServer(t, greeting, func(net.Conn, string, string) []string { return nil })
		c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: i%4 < 2})
		err := c.WaitGreeting()
		_, text, _ := strings.Cut(strings.TrimPrefix(greeting, "* "), " ")
		if _, after, ok := strings.Cut(text, "] "); ok {
			text = after
		}
		var imapErr *imap.Error
		if !errors.As(err, &imapErr) || imapErr.Text != text {
			t.Errorf("greeting %q: WaitGreeting = %v, want an error with text %q", greeting, err, text)
		}
		c.Close()
	}
}

// noopServer answers every line with "<tag> OK NOOP completed." without
// allocating, so that AllocsPerRun counts the client's allocations.
func noopServer(t *testing.T) net.Conn {
	t.Helper()
	clientConn, conn := loopbackPair(t)
	go func() {
		defer conn.Close()
		io.WriteString(conn, "* OK [CAPABILITY IMAP4rev1 LITERAL+] hi\r\n")
		br := bufio.NewReader(conn)
		out := make([]byte, 0, 128)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			tag, _, _ := strings.Cut(string(line), " ") // no allocation: compared, not kept
			n := strings.IndexByte(string(line), ' ')
			if n < 0 || tag == "" {
				return
			}
			out = append(append(out[:0], line[:n]...), " OK NOOP completed (0.001 + 0.000 secs).\r\n"...)
			if _, err := conn.Write(out); err != nil {
				return
			}
		}
	}()
	return clientConn
}

// Allocations per NOOP, command to completion. beta.8 with the patches up
// to read-stack made 9 (the tag, the done channel and its buffer, the
// wire encoder, the command encoder, its continuation callback, the
// command, the OK's text, and the caller's wait); command-reuse and
// text-skip take four of them away, done-signal the channel's buffer.
func TestPatchCommandReuseAllocations(t *testing.T) {
	c := imapclient.New(noopServer(t), &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	if err := c.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if err := c.Noop().Wait(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per NOOP", allocs)
	if allocs > 4 {
		t.Errorf("%v allocations per NOOP, want at most 4", allocs)
	}
}
