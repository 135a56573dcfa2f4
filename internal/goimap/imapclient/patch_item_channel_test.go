package imapclient_test

// Test for mailbench's item-channel.patch: with ReadInCaller a message's
// items wait in a channel of 8; a message with more items than that is
// read whole all the same (the read loop yields to the consumer).

import (
	"net"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

func TestPatchItemChannel(t *testing.T) {
	const sections = 20
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
		if !strings.HasPrefix(rest, "FETCH") {
			return []string{tag + " OK"}
		}
		line := "* 1 FETCH (UID 1 FLAGS (\\Seen)"
		for i := 1; i <= sections; i++ {
			line += " BODY[" + itoa(i) + "] \"part" + itoa(i) + "\""
		}
		return []string{line + ")", tag + " OK"}
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	opts := &imap.FetchOptions{UID: true, Flags: true}
	for i := 1; i <= sections; i++ {
		opts.BodySection = append(opts.BodySection, &imap.FetchItemBodySection{Part: []int{i}})
	}
	msgs, err := c.Fetch(imap.SeqSetNum(1), opts).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].UID != 1 || len(msgs[0].Flags) != 1 || len(msgs[0].BodySection) != sections {
		t.Fatalf("got %+v", msgs)
	}
	for i, s := range msgs[0].BodySection {
		if want := "part" + itoa(i+1); string(s.Bytes) != want {
			t.Errorf("section %d: %q, want %q", i+1, s.Bytes, want)
		}
	}
}
