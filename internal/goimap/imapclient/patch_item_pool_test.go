package imapclient_test

// Test for mailbench's item-pool.patch: with ReadInCaller a message's item
// channel ends with a nil item and serves the next messages again. Items
// must never cross from one message to another, whether the caller reads a
// message whole, in part (the rest discarded by the next Next) or not at
// all, with more items than the channel holds and with a literal streamed
// from the connection; and Next after the end keeps returning nil.

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

func TestPatchItemPool(t *testing.T) {
	const messages = 30
	big := strings.Repeat("b", 20000) // above smallLiteralMax: streamed
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
		if !strings.HasPrefix(rest, "FETCH") {
			return []string{tag + " OK"}
		}
		var lines []string
		for i := 1; i <= messages; i++ {
			line := fmt.Sprintf("* %d FETCH (UID %d FLAGS (\\Seen) RFC822.SIZE %d", i, 100+i, 1000+i)
			switch i % 3 {
			case 1: // more items than the channel's 8 slots
				for p := 1; p <= 10; p++ {
					line += fmt.Sprintf(" BODY[%d] \"m%d.%d\"", p, i, p)
				}
			case 2: // a streamed literal
				line += fmt.Sprintf(" BODY[1] {%d}\r\n%s", len(big), big)
			}
			lines = append(lines, line+")")
		}
		return append(lines, tag+" OK done")
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	for round := range 4 {
		var set imap.SeqSet
		set.AddRange(1, messages)
		cmd := c.Fetch(set, &imap.FetchOptions{UID: true})
		for i := 1; ; i++ {
			msg := cmd.Next()
			if msg == nil {
				if i != messages+1 {
					t.Fatalf("round %d: %d messages", round, i-1)
				}
				break
			}
			if msg.SeqNum != uint32(i) {
				t.Fatalf("round %d: message %d is %d", round, i, msg.SeqNum)
			}
			// Read all, some or none of its items, by message and round.
			want := []string{fmt.Sprintf("UID %d", 100+i), "FLAGS", fmt.Sprintf("SIZE %d", 1000+i)}
			switch i % 3 {
			case 1:
				for p := 1; p <= 10; p++ {
					want = append(want, fmt.Sprintf("m%d.%d", i, p))
				}
			case 2:
				want = append(want, big)
			}
			read := len(want)
			switch (i + round) % 4 {
			case 1:
				read = 1
			case 2:
				read = 0
			case 3:
				read = 4
			}
			for k := 0; k < read; k++ {
				item := msg.Next()
				if got := describeItem(t, item); k < len(want) && got != want[k] {
					t.Fatalf("round %d, message %d, item %d: %.40q, want %.40q", round, i, k, got, want[k])
				}
			}
			if read == len(want) {
				for range 3 {
					if item := msg.Next(); item != nil {
						t.Fatalf("round %d, message %d: an item after the last: %T", round, i, item)
					}
				}
			}
		}
		if err := cmd.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func describeItem(t *testing.T, item imapclient.FetchItemData) string {
	switch item := item.(type) {
	case imapclient.FetchItemDataUID:
		return fmt.Sprintf("UID %d", item.UID)
	case imapclient.FetchItemDataFlags:
		return "FLAGS"
	case imapclient.FetchItemDataRFC822Size:
		return fmt.Sprintf("SIZE %d", item.Size)
	case imapclient.FetchItemDataBodySection:
		b, err := io.ReadAll(item.Literal)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	case nil:
		return "nil"
	}
	return fmt.Sprintf("%T", item)
}

// A message whose items fill its channel ends with a close, as before: the
// nil item must never wait for a reader. Here nobody reads the message and
// the client is closed while its items wait; Close must return.
func TestPatchItemPoolFullChannel(t *testing.T) {
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
		if !strings.HasPrefix(rest, "FETCH") {
			return []string{tag + " OK"}
		}
		line := "* 1 FETCH (UID 1 FLAGS () RFC822.SIZE 1"
		for p := 1; p <= 5; p++ { // 8 items: the channel's size
			line += fmt.Sprintf(" BODY[%d] \"x\"", p)
		}
		return []string{line + ")", "* 2 FETCH (UID 2)", tag + " OK done"}
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true})
	cmd := c.Fetch(imap.SeqSetNum(1, 2), &imap.FetchOptions{UID: true})
	if msg := cmd.Next(); msg == nil || msg.SeqNum != 1 {
		t.Fatalf("first message: %+v", msg)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits after 10 s")
	}
}
