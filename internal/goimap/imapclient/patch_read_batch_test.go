package imapclient_test

// Tests for mailbench's read-batch.patch: with ReadInCaller, the read loop
// reads on, without yielding to its caller, after untagged data whose
// successor's first line is already buffered; never past a tagged
// response, and never past a message decoded in place (NextInto) that its
// caller has not taken. Every server here writes each block of lines in
// one write, so what arrives together is buffered together.

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

// blockServer writes greeting, then answers each command line with the
// block reply returns for it, each in one write.
func blockServer(t *testing.T, greeting string, reply func(tag, rest string) string) net.Conn {
	t.Helper()
	clientConn, conn := loopbackPair(t)
	go func() {
		defer conn.Close()
		if _, err := io.WriteString(conn, greeting); err != nil {
			return
		}
		br := bufio.NewReader(conn)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			tag, rest, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
			if _, err := io.WriteString(conn, reply(tag, rest)); err != nil {
				return
			}
		}
	}()
	return clientConn
}

// existsCounter is a client that reads in its caller and stores the count
// of every unilateral EXISTS it handles.
func existsCounter(conn net.Conn) (*imapclient.Client, *atomic.Int32) {
	var exists atomic.Int32
	c := imapclient.New(conn, &imapclient.Options{ReadInCaller: true, UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				exists.Store(int32(*d.NumMessages))
			}
		},
	}})
	return c, &exists
}

// noopThenExists waits for a NOOP and fails t unless the EXISTS count
// handled by then is want; after says what was waited for.
func noopThenExists(t *testing.T, c *imapclient.Client, exists *atomic.Int32, want int32, after string) {
	t.Helper()
	if err := c.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	if n := exists.Load(); n != want {
		t.Fatalf("EXISTS %d after %s, want %d", n, after, want)
	}
}

// Untagged data that arrived with the greeting is read in the same
// resumption as the greeting; the data that arrived with a tagged
// completion is not read until the next wait.
func TestPatchReadBatchUntaggedOnly(t *testing.T) {
	conn := blockServer(t, "* OK [CAPABILITY IMAP4rev1] hi\r\n* 3 EXISTS\r\n", func(tag, rest string) string {
		switch {
		case strings.HasPrefix(rest, "NOOP") && tag == "T1":
			return tag + " OK\r\n* 4 EXISTS\r\n"
		case strings.HasPrefix(rest, "LOGOUT"):
			return "* BYE\r\n" + tag + " OK bye\r\n"
		}
		return tag + " OK\r\n"
	})
	c, exists := existsCounter(conn)
	defer c.Close()
	if err := c.WaitGreeting(); err != nil {
		t.Fatal(err)
	}
	if n := exists.Load(); n != 3 {
		t.Fatalf("EXISTS %d after the greeting's wait, want 3 (it arrived with the greeting)", n)
	}
	noopThenExists(t, c, exists, 3, "T1's completion (reading past a tagged response would give 4)")
	noopThenExists(t, c, exists, 4, "the next wait")
	if err := c.Logout().Wait(); err != nil {
		t.Fatal(err)
	}
}

// A FETCH whose messages arrive in one write, read with NextInto (each
// decoded into the caller's one buffer) and with Next: every message,
// in order, none overwritten by the next before its caller took it.
func TestPatchReadBatchFetchInOneWrite(t *testing.T) {
	const n = 200
	conn := blockServer(t, "* OK [CAPABILITY IMAP4rev1] hi\r\n", func(tag, rest string) string {
		if strings.HasPrefix(rest, "FETCH") {
			var b strings.Builder
			for i := 1; i <= n; i++ {
				b.WriteString("* " + itoa(i) + " FETCH (UID " + itoa(1000+i) + " FLAGS (\\Seen) RFC822.SIZE " + itoa(i) + ")\r\n")
			}
			return b.String() + tag + " OK done\r\n"
		}
		if strings.HasPrefix(rest, "LOGOUT") {
			return "* BYE\r\n" + tag + " OK bye\r\n"
		}
		return tag + " OK\r\n"
	})
	c, _ := existsCounter(conn)
	defer c.Close()
	opts := &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true}
	set := imap.SeqSet{{Start: 1, Stop: n}}

	cmd := c.Fetch(set, opts)
	var buf imapclient.FetchMessageBuffer
	got := 0
	for cmd.NextInto(&buf, 0) {
		got++
		if buf.SeqNum != uint32(got) || buf.UID != imap.UID(1000+got) || buf.RFC822Size != int64(got) {
			t.Fatalf("NextInto message %d: seq %d, UID %d, size %d", got, buf.SeqNum, buf.UID, buf.RFC822Size)
		}
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("NextInto: %d messages, want %d", got, n)
	}

	cmd = c.Fetch(set, opts)
	got = 0
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		b, err := msg.Collect()
		if err != nil {
			t.Fatal(err)
		}
		got++
		if b.SeqNum != uint32(got) || b.UID != imap.UID(1000+got) {
			t.Fatalf("Next message %d: seq %d, UID %d", got, b.SeqNum, b.UID)
		}
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("Next: %d messages, want %d", got, n)
	}
	if err := c.Logout().Wait(); err != nil {
		t.Fatal(err)
	}
}
