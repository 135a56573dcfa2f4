package smtp

// Test of mailbench's client-buffers.patch: clients whose buffers come from
// the pools and go back (ReleaseBuffers) one after another write exactly
// the bytes, and find exactly the bytes left unread after QUIT, that
// clients with their own new buffers (textproto.NewConn, the pools off) do:
// nothing a client leaves in a buffer reaches the next one, and a grown write buffer taken from a pool
// serves a smaller or a larger message as a new one does.

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// clientRound is one connection of the script: a message of size bytes
// (0: none) and what the server sends after its "221" (left unread).
type clientRound struct {
	size     int
	trailing string
}

// runClientRounds runs the rounds on one client each, in order, and returns
// per round the bytes written and what was left unread after QUIT.
func runClientRounds(t *testing.T, pooled bool, rounds []clientRound) []string {
	t.Helper()
	old := poolTextBuffers
	poolTextBuffers = pooled
	defer func() { poolTextBuffers = old }()
	var out []string
	for i, r := range rounds {
		replies := fmt.Sprintf("220 hi %d\r\n250-x%d\r\n250 SIZE\r\n", i, i)
		if r.size > 0 {
			replies += fmt.Sprintf("250 mail %d\r\n250 rcpt %d\r\n354 go %d\r\n250 queued %d\r\n", i, i, i, i)
		}
		replies += fmt.Sprintf("221 bye %d\r\n%s", i, r.trailing)
		conn := &scriptConn{replies: strings.NewReader(replies)}
		c := NewClient(conn)
		if c.textPooled != pooled {
			t.Fatalf("round %d: textPooled = %v with the pools %v", i, c.textPooled, pooled)
		}
		if err := c.Hello(fmt.Sprintf("client%d.test", i)); err != nil {
			t.Fatal(err)
		}
		if r.size > 0 {
			body := bytes.Repeat([]byte(fmt.Sprintf("round %d, .dotted\r\n.x\r\n", i)), r.size/20+1)[:r.size]
			if err := c.Mail(fmt.Sprintf("a%d@x.test", i), nil); err != nil {
				t.Fatal(err)
			}
			if err := c.Rcpt("b@x.test", nil); err != nil {
				t.Fatal(err)
			}
			c.GrowWriteBuffer(r.size + r.size/32 + 16)
			w, err := c.Data()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Quit(); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		// What is left in the read buffer after QUIT, as the client sees it.
		left, _ := io.ReadAll(c.text.R)
		c.ReleaseBuffers()
		c.ReleaseBuffers() // a second call does nothing
		out = append(out, fmt.Sprintf("wrote %q; left %q", bytes.Join(conn.writes, nil), left))
	}
	return out
}

func TestPatchClientBuffersSameBytes(t *testing.T) {
	rounds := []clientRound{
		{size: 0, trailing: "250 stray reply left in the buffer\r\n"},
		{size: 20000},
		{size: 5000, trailing: "garbage after quit"},
		{size: 5000},
		{size: 100, trailing: strings.Repeat("x", 1500)},
		{size: 300000},
		{size: 9000},
	}
	plain := runClientRounds(t, false, rounds)
	for pass := range 3 { // later passes take buffers the earlier ones gave back
		pooled := runClientRounds(t, true, rounds)
		for i := range rounds {
			if pooled[i] != plain[i] {
				t.Fatalf("pass %d, round %d: pooled buffers changed what the client did:\n pooled %.300s\n  plain %.300s", pass, i, pooled[i], plain[i])
			}
		}
	}
}

func TestPatchClientBuffersGrownSizeClass(t *testing.T) {
	conn := &scriptConn{replies: strings.NewReader("220 hi\r\n")}
	c := NewClient(conn)
	for _, tt := range []struct{ grow, want int }{
		{100, 4096},  // already large enough
		{5121, 6144}, // rounded up to a whole KiB
		{6144, 6144}, // large enough again
		{6145, 7168},
		{maxWriteBuffer + 1, maxWriteBuffer},
	} {
		c.GrowWriteBuffer(tt.grow)
		if got := c.text.W.Size(); got != tt.want {
			t.Errorf("GrowWriteBuffer(%d): write buffer %d bytes, want %d", tt.grow, got, tt.want)
		}
	}
	c.ReleaseBuffers()
	if c.text.R != nil || c.text.W != nil {
		t.Error("ReleaseBuffers left the buffers in the client")
	}
}
