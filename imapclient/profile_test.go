package imapclient

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// floodingFetchServer answers a UID FETCH with n messages, whatever was
// asked: a server that answers "from:*" with everything it has.
func floodingFetchServer(t *testing.T, n int) string {
	return flagsFetchServer(t, n, func(int) string { return `\Seen` })
}

// flagsFetchServer is floodingFetchServer whose message i has the flags
// flags(i) (a space-separated list).
func flagsFetchServer(t *testing.T, n int, flags func(i int) string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r, w := bufio.NewReader(c), bufio.NewWriter(c)
		fmt.Fprintf(w, "* OK [CAPABILITY IMAP4rev1] ready\r\n")
		w.Flush()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			tag, rest, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
			switch verb := strings.ToUpper(strings.Fields(rest + " x")[0]); verb {
			case "CAPABILITY":
				fmt.Fprintf(w, "* CAPABILITY IMAP4rev1\r\n%s OK done\r\n", tag)
			case "LOGIN":
				fmt.Fprintf(w, "%s OK [CAPABILITY IMAP4rev1] in\r\n", tag)
			case "SELECT":
				fmt.Fprintf(w, "* %d EXISTS\r\n* OK [UIDVALIDITY 1] ok\r\n* OK [UIDNEXT %d] ok\r\n%s OK selected\r\n", n, n+1, tag)
			case "UID":
				for i := 1; i <= n; i++ {
					fmt.Fprintf(w, "* %d FETCH (UID %d FLAGS (%s))\r\n", i, i, flags(i))
				}
				fmt.Fprintf(w, "%s OK fetched\r\n", tag)
			default:
				fmt.Fprintf(w, "%s OK done\r\n", tag)
			}
			w.Flush()
		}
	}()
	return ln.Addr().String()
}

// connectSelected connects to the fake server at addr and selects INBOX;
// the client is closed when the test ends.
func connectSelected(t *testing.T, addr string) *Client {
	t.Helper()
	ctx := context.Background()
	c, err := Connect(ctx, Config{Address: addr, Timeout: 10 * time.Second, Observer: measure.Discard}, "user", "secret-password")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.SelectAs(ctx, "", "INBOX", SelectOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFetchItemsKeepsAtMostKeep: a UID FETCH answered with 20,000
// messages is read to its end and succeeds, and only the first keep are
// returned: a client profile's new-mail look costs time, not memory,
// whatever the server sends.
func TestFetchItemsKeepsAtMostKeep(t *testing.T) {
	addr := floodingFetchServer(t, 20000)
	ctx := context.Background()
	c := connectSelected(t, addr)
	items, _ := workload.ParseFetchItems("UID FLAGS")
	infos, err := c.UIDFetchItems(ctx, measure.ClientNewMail, 1, 0, items, 0, 10)
	if err != nil || len(infos) != 10 || infos[9].UID != 10 {
		t.Fatalf("%d infos (last %+v), %v: want the first 10", len(infos), infos[len(infos)-1:], err)
	}
	if _, err := c.UIDFetchItems(ctx, measure.ClientResync, 1, 0, items, 0, 0); err != nil {
		t.Errorf("the connection after the flood: %v", err)
	}
}

// TestFetchFlagsPerMessage: every message's flags are its own, across
// the arrays one FETCH's flags are kept in (300 messages overflow the
// first ones), and appending to one message's flags changes no other's.
func TestFetchFlagsPerMessage(t *testing.T) {
	const n = 300
	flags := func(i int) []string {
		out := []string{`\Seen`}
		for k := range i % 5 {
			out = append(out, fmt.Sprintf("kw%d_%d", i, k))
		}
		if i%7 == 0 {
			out = nil
		}
		return out
	}
	addr := flagsFetchServer(t, n, func(i int) string { return strings.Join(flags(i), " ") })
	ctx := context.Background()
	c := connectSelected(t, addr)
	items, _ := workload.ParseFetchItems("UID FLAGS")
	infos, err := c.UIDFetchItems(ctx, measure.ClientResync, 1, 0, items, 0, -1)
	if err != nil || len(infos) != n {
		t.Fatalf("%d infos, %v", len(infos), err)
	}
	for i := range infos {
		infos[i].Flags = append(infos[i].Flags, "appended")
	}
	for i, mi := range infos {
		want := append(flags(i+1), "appended")
		if strings.Join(mi.Flags, " ") != strings.Join(want, " ") {
			t.Fatalf("message %d: flags %q, want %q", i+1, mi.Flags, want)
		}
	}
}
