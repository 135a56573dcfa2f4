package imapclient_test

// Test for mailbench's caller-deadlines.patch: with
// Options.CallerDeadlines the client sets no deadline on its connection
// (its caller bounds every wait); without it, beta.8's deadlines are set
// as before.

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

// deadlineCounter counts the deadlines set on a connection.
type deadlineCounter struct {
	net.Conn
	n atomic.Int32
}

func (d *deadlineCounter) SetDeadline(t time.Time) error {
	d.n.Add(1)
	return d.Conn.SetDeadline(t)
}

func (d *deadlineCounter) SetReadDeadline(t time.Time) error {
	d.n.Add(1)
	return d.Conn.SetReadDeadline(t)
}

func (d *deadlineCounter) SetWriteDeadline(t time.Time) error {
	d.n.Add(1)
	return d.Conn.SetWriteDeadline(t)
}

func TestPatchCallerDeadlines(t *testing.T) {
	for _, tc := range []struct {
		callerDeadlines, readInCaller bool
		wantNone                      bool
	}{
		{false, false, false},
		{false, true, false},
		{true, false, true},
		{true, true, true},
	} {
		conn := &deadlineCounter{Conn: scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
			if strings.HasPrefix(rest, "FETCH") {
				return []string{"* 1 FETCH (UID 1 BODY[] {3}", "abc)", tag + " OK"}
			}
			return []string{tag + " OK"}
		})}
		c := imapclient.New(conn, &imapclient.Options{CallerDeadlines: tc.callerDeadlines, ReadInCaller: tc.readInCaller})
		if err := c.Noop().Wait(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{{}}}).Collect(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if n := conn.n.Load(); (n == 0) != tc.wantNone {
			t.Errorf("CallerDeadlines %v, ReadInCaller %v: %d deadlines set", tc.callerDeadlines, tc.readInCaller, n)
		}
	}
}
