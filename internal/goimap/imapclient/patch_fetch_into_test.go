package imapclient_test

// Differential test for mailbench's fetch-into.patch: what
// FetchCommand.NextInto leaves in its buffer, message by message, equals
// what Next and FetchMessageData.Collect give (beta.8's way, kept), with
// the sections' bytes cut at the same budget, whether NextInto decodes in
// place (ReadInCaller) or copies from Next (a reader goroutine, or a
// UnilateralDataHandler that takes FETCH data); and decoding in place is
// what it is for: fewer allocations per message than Next.

import (
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

// fetchIntoLines are a FETCH's responses for seq 1..n: every item kind,
// sections as literals (small, empty, cut by the budget, and one of 20,000
// bytes that is streamed), quoted strings and NIL, empty and repeated
// FLAGS, and data for messages the command did not ask for.
func fetchIntoLines(n int) []string {
	big := strings.Repeat("b", 20000)
	var lines []string
	for i := 1; i <= n; i++ {
		hdr := fmt.Sprintf("X-Mailbench-Id: m%d\r\nSubject: s%d\r\n\r\n", i, i)
		line := fmt.Sprintf("* %d FETCH (UID %d FLAGS (\\Seen $Label%d) INTERNALDATE \"%02d-Dec-2026 04:22:26 +0000\" RFC822.SIZE %d "+
			"ENVELOPE (NIL \"subject %d\" NIL NIL NIL NIL NIL NIL NIL \"<m%d@x>\") "+
			"BODY[HEADER.FIELDS (X-Mailbench-Id Subject)] {%d}\r\n%s", i, 100+i, i%5, 1+i%28, 4000+i, i, i, len(hdr), hdr)
		switch i % 6 {
		case 1:
			line += fmt.Sprintf(" BODY[] {%d}\r\n%s", len(big), big)
		case 2:
			line += ` BODY[1] "quoted" BODY[2] NIL BODY[3] {0}` + "\r\n" + ` FLAGS ()`
		case 3:
			line += ` BINARY[1] {5}` + "\r\nbin01 BINARY.SIZE[1] 5 MODSEQ (77)"
		case 4:
			line += ` BODYSTRUCTURE ("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 12 1 NIL NIL NIL NIL)`
		case 5:
			line += ` FLAGS (\Answered) FLAGS (\Deleted \Draft)`
		}
		lines = append(lines, line+")")
		if i == 2 {
			lines = append(lines, "* 999 FETCH (FLAGS (\\Seen))", "* 1 FETCH (FLAGS (\\Seen))", "* 1 FETCH (UID 101 FLAGS (\\Seen))") // not asked for, or again
		}
	}
	return lines
}

// fetchIntoServer answers every FETCH with fetchIntoLines(n).
func fetchIntoServer(t *testing.T, n int) net.Conn {
	return scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
		if strings.HasPrefix(rest, "FETCH") || strings.HasPrefix(rest, "UID FETCH") {
			return append(fetchIntoLines(n), tag+" OK done")
		}
		return []string{tag + " OK"}
	})
}

// fetchIntoOptions asks for what fetchIntoLines holds.
func fetchIntoOptions() *imap.FetchOptions {
	return &imap.FetchOptions{UID: true, Flags: true, InternalDate: true, RFC822Size: true, Envelope: true,
		BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"X-Mailbench-Id", "Subject"}, Peek: true}}}
}

// collectCut is beta.8's Next and Collect, with the sections' bytes then
// cut as NextInto's budget cuts them.
func collectCut(t *testing.T, c *imapclient.Client, set imap.NumSet, maxBytes int) []*imapclient.FetchMessageBuffer {
	t.Helper()
	cmd := c.Fetch(set, fetchIntoOptions())
	var out []*imapclient.FetchMessageBuffer
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		buf, err := msg.Collect()
		if err != nil {
			t.Fatal(err)
		}
		budget := maxBytes
		cut := func(b []byte) []byte {
			if b == nil {
				return nil
			}
			n := min(len(b), max(budget, 0))
			budget -= n
			return b[:n]
		}
		for i := range buf.BodySection {
			buf.BodySection[i].Bytes = cut(buf.BodySection[i].Bytes)
		}
		for i := range buf.BinarySection {
			buf.BinarySection[i].Bytes = cut(buf.BinarySection[i].Bytes)
		}
		out = append(out, buf)
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameBuffer compares two message buffers, an empty FLAGS list equal to a
// nil one.
func sameBuffer(got, want *imapclient.FetchMessageBuffer) bool {
	g, w := *got, *want
	if len(g.Flags) == 0 && len(w.Flags) == 0 {
		g.Flags, w.Flags = nil, nil
	}
	for _, p := range []*imapclient.FetchMessageBuffer{&g, &w} {
		if len(p.BodySection) == 0 {
			p.BodySection = nil
		}
		if len(p.BinarySection) == 0 {
			p.BinarySection = nil
		}
		if len(p.BinarySectionSize) == 0 {
			p.BinarySectionSize = nil
		}
	}
	// Exported fields only: the buffer's own envelope (envelope-into.patch)
	// is where Envelope points, not a field of its own.
	gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
	for i := range gv.NumField() {
		if gv.Type().Field(i).IsExported() && !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			return false
		}
	}
	return true
}

func TestPatchFetchInto(t *testing.T) {
	const n = 24
	for _, mode := range []struct {
		name string
		opts *imapclient.Options
	}{
		{"in place", &imapclient.Options{ReadInCaller: true}},
		{"reader goroutine", &imapclient.Options{}},
		{"unilateral handler", &imapclient.Options{ReadInCaller: true, UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Fetch: func(msg *imapclient.FetchMessageData) { msg.Collect() },
		}}},
	} {
		for _, uid := range []bool{false, true} {
			var set imap.NumSet
			if uid {
				u := imap.UIDSet{}
				u.AddRange(101, 100+n)
				set = u
			} else {
				s := imap.SeqSet{}
				s.AddRange(1, n)
				set = s
			}
			c := imapclient.New(fetchIntoServer(t, n), mode.opts)
			for _, maxBytes := range []int{1 << 20, 100, 30, 5, 0} {
				want := collectCut(t, c, set, maxBytes)
				if len(want) != n {
					t.Fatalf("%s: Collect gave %d messages", mode.name, len(want))
				}
				var buf imapclient.FetchMessageBuffer
				cmd := c.Fetch(set, fetchIntoOptions())
				got := 0
				for cmd.NextInto(&buf, maxBytes) {
					if got >= len(want) {
						t.Fatalf("%s, uid %v, max %d: message %d too many", mode.name, uid, maxBytes, got+1)
					}
					if !sameBuffer(&buf, want[got]) {
						t.Fatalf("%s, uid %v, max %d, message %d:\n got %+v\nwant %+v", mode.name, uid, maxBytes, got+1, buf, *want[got])
					}
					got++
				}
				if err := cmd.Close(); err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				if got != n {
					t.Fatalf("%s, uid %v, max %d: %d messages, want %d", mode.name, uid, maxBytes, got, n)
				}
			}
			c.Close()
		}
	}
}

// A message read with Next between NextInto calls, and the rest left to
// Close: every message comes once, in order.
func TestPatchFetchIntoMixed(t *testing.T) {
	const n = 12
	c := imapclient.New(fetchIntoServer(t, n), &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	var set imap.SeqSet
	set.AddRange(1, n)
	cmd := c.Fetch(set, fetchIntoOptions())
	var buf imapclient.FetchMessageBuffer
	for i := 1; i <= 6; i++ {
		if i%2 == 0 {
			msg := cmd.Next()
			if msg == nil || msg.SeqNum != uint32(i) {
				t.Fatalf("Next: %+v, want message %d", msg, i)
			}
			continue // its items unread: the next call discards them
		}
		if !cmd.NextInto(&buf, 1<<20) || buf.SeqNum != uint32(i) || buf.UID != imap.UID(100+i) {
			t.Fatalf("NextInto: message %d (UID %d), want %d", buf.SeqNum, buf.UID, i)
		}
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
}

// A literal cut short by the server's hang-up: NextInto returns false and
// Close the error, without waiting, decoding in place or copying from a
// reader goroutine (under -race: the failed literal is not read again).
func TestPatchFetchIntoCutLiteral(t *testing.T) {
	for _, tc := range []struct {
		size int // read by the decoder, or streamed from the connection
		opts *imapclient.Options
	}{
		{100, &imapclient.Options{ReadInCaller: true}}, {20000, &imapclient.Options{ReadInCaller: true}},
		{100, &imapclient.Options{}}, {20000, &imapclient.Options{}},
	} {
		size := tc.size
		clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(conn net.Conn, tag, rest string) []string {
			if !strings.HasPrefix(rest, "FETCH") {
				return []string{tag + " OK"}
			}
			fmt.Fprintf(conn, "* 1 FETCH (UID 1 BODY[] {%d}\r\nonly this", size)
			conn.Close()
			return nil
		})
		c := imapclient.New(clientConn, tc.opts)
		cmd := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{{}}})
		var buf imapclient.FetchMessageBuffer
		// Next gives what came before a failure (beta.8: the UID), and
		// so does NextInto when it copies from Next; never the section.
		for cmd.NextInto(&buf, 1<<20) {
			if len(buf.BodySection) > 0 {
				t.Errorf("size %d: a section from a cut literal: %+v", size, buf)
			}
		}
		if err := cmd.Close(); err == nil {
			t.Errorf("size %d: Close after a cut literal: no error", size)
		}
		c.Close()
	}
}

// Decoding in place is the point: a FETCH of 20 messages of mailbench's
// session allocates less with NextInto than with Next.
func TestPatchFetchIntoAllocations(t *testing.T) {
	const n = 20
	lines := func() []string {
		var out []string
		for i := 1; i <= n; i++ {
			hdr := fmt.Sprintf("X-Mailbench-Id: m%d\r\n\r\n", i)
			out = append(out, fmt.Sprintf("* %d FETCH (UID %d FLAGS (\\Seen) INTERNALDATE \"04-Dec-2026 04:22:26 +0000\" RFC822.SIZE 4000 "+
				"BODY[HEADER.FIELDS (X-Mailbench-Id)] {%d}\r\n%s)", i, i, len(hdr), hdr))
		}
		return out
	}()
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
		return append(append([]string(nil), lines...), tag+" OK done")
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	opts := &imap.FetchOptions{UID: true, Flags: true, InternalDate: true, RFC822Size: true,
		BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"X-Mailbench-Id"}, Peek: true}}}
	var set imap.SeqSet
	set.AddRange(1, n)
	var buf imapclient.FetchMessageBuffer
	into := testing.AllocsPerRun(20, func() {
		cmd := c.Fetch(set, opts)
		for cmd.NextInto(&buf, 1<<16) {
		}
		if err := cmd.Close(); err != nil {
			t.Fatal(err)
		}
	})
	next := testing.AllocsPerRun(20, func() {
		cmd := c.Fetch(set, opts)
		for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
			for item := msg.Next(); item != nil; item = msg.Next() {
				if sec, ok := item.(imapclient.FetchItemDataBodySection); ok {
					buf := make([]byte, 64)
					sec.Literal.Read(buf)
				}
			}
		}
		if err := cmd.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("a FETCH of %d messages: %.0f allocations with NextInto, %.0f with Next", n, into, next)
	if into > next-4*n {
		t.Errorf("NextInto: %.0f allocations, Next %.0f: not 4 fewer per message", into, next)
	}
}

// A hostile server: each message has one more section than the one
// before, the last one large. What the buffer keeps from message to
// message stays bounded (it grew by a large section per message).
func TestPatchFetchIntoBounded(t *testing.T) {
	const (
		n        = 300
		maxBytes = 4096
	)
	large := strings.Repeat("x", 4000)
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
		if !strings.HasPrefix(rest, "FETCH") {
			return []string{tag + " OK"}
		}
		var out []string
		for i := 1; i <= n; i++ {
			line := fmt.Sprintf("* %d FETCH (UID %d FLAGS (%s)", i, i, strings.TrimSpace(strings.Repeat(`\Seen `, i%100+1)))
			for p := 1; p <= i%100; p++ {
				line += fmt.Sprintf(` BODY[%d] "s"`, p)
			}
			out = append(out, line+fmt.Sprintf(" BODY[%d] {%d}\r\n%s)", i%100+1, len(large), large))
		}
		return append(out, tag+" OK done")
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true})
	defer c.Close()
	var set imap.SeqSet
	set.AddRange(1, n)
	cmd := c.Fetch(set, &imap.FetchOptions{UID: true})
	var buf imapclient.FetchMessageBuffer
	most := 0
	for i := 1; cmd.NextInto(&buf, maxBytes); i++ {
		if len(buf.BodySection) != i%100+1 || string(buf.BodySection[i%100].Bytes) != large[:min(len(large), maxBytes-i%100)] {
			t.Fatalf("message %d: %d sections", i, len(buf.BodySection))
		}
		kept := cap(buf.Flags) * 16
		for _, s := range buf.BodySection[:cap(buf.BodySection)] {
			kept += cap(s.Bytes) + 48
		}
		most = max(most, kept)
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	// This message's sections and flags, and at most twice maxBytes of
	// the ones before, with append's slack.
	if bound := 8 * maxBytes; most > bound {
		t.Errorf("the buffer held %d bytes at most, want at most %d", most, bound)
	}
	t.Logf("the buffer held %d bytes at most", most)
}
