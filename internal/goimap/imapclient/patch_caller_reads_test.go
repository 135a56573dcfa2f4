package imapclient_test

// Differential test for mailbench's caller-reads.patch: the package's own
// tests, run again in a child process with Options.ReadInCaller set on
// every client they make (newClientServerPair), must pass as they do
// with upstream's reader goroutine; and the mode's own contracts below.

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

func TestPatchCallerReads(t *testing.T) {
	if os.Getenv("GOIMAP_TEST_READ_IN_CALLER") == "1" {
		t.Skip("already the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.skip=^TestPatchCallerReads$", "-test.count=1"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GOIMAP_TEST_READ_IN_CALLER=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the package's tests with ReadInCaller: %v\n%s", err, out)
	}
}

// scriptedServer accepts one loopback connection and answers each of its
// command lines with the lines that reply returns for it, after the
// greeting. It returns the client's end. (Not net.Pipe: a pipe's writes
// wait for the reader, and a client whose caller reads does not read
// while it writes a command.)
func scriptedServer(t *testing.T, greeting string, reply func(conn net.Conn, tag, rest string) []string) net.Conn {
	t.Helper()
	return scriptedServerLater(t, greeting, "", reply)
}

// scriptedServerLater is scriptedServer that also writes the line later
// (unless empty) 50 ms after the greeting, on its own.
func scriptedServerLater(t *testing.T, greeting, later string, reply func(conn net.Conn, tag, rest string) []string) net.Conn {
	t.Helper()
	clientConn, conn := loopbackPair(t)
	go func() {
		defer conn.Close()
		io.WriteString(conn, greeting+"\r\n")
		if later != "" {
			time.Sleep(50 * time.Millisecond)
			io.WriteString(conn, later+"\r\n")
		}
		br := bufio.NewReader(conn)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			tag, rest, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
			for _, l := range reply(conn, tag, rest) {
				if _, err := io.WriteString(conn, l+"\r\n"); err != nil {
					return
				}
			}
		}
	}()
	return clientConn
}

// loopbackPair returns both ends of a new loopback TCP connection, closed
// when the test ends.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return client, server
}

// With ReadInCaller a command's responses are read by the goroutine that
// waits, when it waits: an EXISTS that arrives after the greeting was
// read is handled only once a command is waited for, not before. (One
// that arrives with the greeting is read with it: read-batch.patch.) A FETCH of more messages
// than the channels hold (128 messages, 32 items each) is read as the
// caller consumes it.
func TestPatchCallerReadsInWaiter(t *testing.T) {
	const n = 300
	clientConn := scriptedServerLater(t, "* OK [CAPABILITY IMAP4rev1] hi", "* 3 EXISTS", func(_ net.Conn, tag, rest string) []string {
		switch {
		case strings.HasPrefix(rest, "FETCH"):
			var out []string
			for i := 1; i <= n; i++ {
				out = append(out, "* "+itoa(i)+" FETCH (UID "+itoa(i)+" RFC822.SIZE 10 BODY[] {3}")
				out = append(out, "abc)")
			}
			return append(out, tag+" OK done")
		case strings.HasPrefix(rest, "LOGOUT"):
			return []string{"* BYE", tag + " OK bye"}
		}
		return []string{tag + " OK"}
	})
	c, exists := existsCounter(clientConn)
	if err := c.WaitGreeting(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // upstream's reader would have read the EXISTS by now
	if n := exists.Load(); n != 0 {
		t.Fatalf("EXISTS %d handled before any wait: something else reads", n)
	}
	noopThenExists(t, c, exists, 3, "NOOP's wait")
	cmd := c.Fetch(imap.SeqSet{{Start: 1, Stop: n}}, &imap.FetchOptions{UID: true, RFC822Size: true, BodySection: []*imap.FetchItemBodySection{{}}})
	got := 0
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		buf, err := msg.Collect()
		if err != nil {
			t.Fatal(err)
		}
		if buf.UID != imap.UID(got+1) || string(buf.BodySection[0].Bytes) != "abc" {
			t.Fatalf("message %d: UID %d, body %q", got+1, buf.UID, buf.BodySection[0].Bytes)
		}
		got++
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("%d messages, want %d", got, n)
	}
	if err := c.Logout().Wait(); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// A connection that ends while a caller waits completes the command with
// an error, and Closed is closed by then.
func TestPatchCallerReadsServerHangsUp(t *testing.T) {
	clientConn := scriptedServer(t, "* OK hi", func(conn net.Conn, tag, rest string) []string {
		conn.Close()
		return nil
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	if err := c.Noop().Wait(); err == nil {
		t.Fatal("NOOP on a connection the server closed: no error")
	}
	select {
	case <-c.Closed():
	case <-time.After(5 * time.Second):
		t.Fatal("Closed not closed after the read loop saw the end")
	}
}

// IDLE hands reading to a goroutine: unilateral data arrives while nobody
// waits for a command.
func TestPatchCallerReadsIdle(t *testing.T) {
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1 IDLE] hi", func(_ net.Conn, tag, rest string) []string {
		switch {
		case strings.HasPrefix(rest, "IDLE"):
			return []string{"+ idling", "* 7 EXISTS"}
		case tag == "DONE":
			return []string{"T2 OK idle done"}
		}
		return []string{tag + " OK"}
	})
	exists := make(chan uint32, 1)
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true, UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				exists <- *d.NumMessages
			}
		},
	}})
	defer c.Close()
	if err := c.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	idle, err := c.Idle()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-exists:
		if n != 7 {
			t.Fatalf("EXISTS %d, want 7", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no EXISTS during IDLE")
	}
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A LIST (with RETURN STATUS: each mailbox waits for its STATUS) and an
// EXPUNGE answered with more entries than their channels hold when the
// caller reads (16, command-costs.patch) are read whole.
func TestPatchCallerReadsLongResults(t *testing.T) {
	const n = 40
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1 LIST-EXTENDED LIST-STATUS] hi", func(_ net.Conn, tag, rest string) []string {
		var out []string
		switch {
		case strings.HasPrefix(rest, "LIST"):
			for i := 1; i <= n; i++ {
				out = append(out, `* LIST () "/" box`+itoa(i), `* STATUS box`+itoa(i)+` (MESSAGES `+itoa(i)+`)`)
			}
		case strings.HasPrefix(rest, "EXPUNGE"):
			for i := 1; i <= n; i++ {
				out = append(out, "* 1 EXPUNGE")
			}
		}
		return append(out, tag+" OK")
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	boxes, err := c.List("", "*", &imap.ListOptions{ReturnStatus: &imap.StatusOptions{NumMessages: true}}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes) != n {
		t.Fatalf("%d mailboxes, want %d", len(boxes), n)
	}
	for i, b := range boxes {
		if b.Mailbox != "box"+itoa(i+1) || b.Status == nil || *b.Status.NumMessages != uint32(i+1) {
			t.Fatalf("mailbox %d: %+v", i+1, b)
		}
	}
	seqs, err := c.Expunge().Collect()
	if err != nil || len(seqs) != n {
		t.Fatalf("EXPUNGE: %d numbers, %v; want %d", len(seqs), err, n)
	}
}
