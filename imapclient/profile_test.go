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
					fmt.Fprintf(w, "* %d FETCH (UID %d FLAGS (\\Seen))\r\n", i, i)
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

// TestFetchItemsKeepsAtMostKeep: a UID FETCH answered with 20,000
// messages is read to its end and succeeds, and only the first keep are
// returned: a client profile's new-mail look costs time, not memory,
// whatever the server sends.
func TestFetchItemsKeepsAtMostKeep(t *testing.T) {
	addr := floodingFetchServer(t, 20000)
	ctx := context.Background()
	c, err := Connect(ctx, Config{Address: addr, Timeout: 10 * time.Second, Observer: measure.Discard}, "user", "secret-password")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SelectAs(ctx, "", "INBOX", SelectOptions{}); err != nil {
		t.Fatal(err)
	}
	items, _ := workload.ParseFetchItems("UID FLAGS")
	infos, err := c.UIDFetchItems(ctx, measure.ClientNewMail, 1, 0, items, 0, 10)
	if err != nil || len(infos) != 10 || infos[9].UID != 10 {
		t.Fatalf("%d infos (last %+v), %v: want the first 10", len(infos), infos[len(infos)-1:], err)
	}
	if _, err := c.UIDFetchItems(ctx, measure.ClientResync, 1, 0, items, 0, 0); err != nil {
		t.Errorf("the connection after the flood: %v", err)
	}
}
