package smtp

// Test of mailbench's client-allocs.patch: readResponse reads a one-line
// reply itself when the buffer holds it, and must return what go-smtp
// v0.25.1's path (textproto's ReadResponse, then toSMTPErr) returns, reply
// after reply, however the server's bytes arrive, and leave the same bytes
// unread.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/textproto"
	"strings"
	"testing"
)

// chunkReader returns s in reads of the sizes sizes gives, cycling.
type chunkReader struct {
	s     string
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.s), r.sizes[r.i%len(r.sizes)])
	r.i++
	n = copy(p, r.s[:n])
	r.s = r.s[n:]
	return n, nil
}

// readReplies reads replies through read until an error that ends the
// stream, at most 20, and describes each.
func readReplies(read func() (int, string, error)) []string {
	var out []string
	for range 20 {
		code, msg, err := read()
		out = append(out, fmt.Sprintf("code %d msg %q err %#v", code, msg, err))
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
	}
	return out
}

// compareReplyParse reads stream with expectCode through the patched
// Client and through upstream's path, with the server's bytes arriving in
// reads of sizes, and reports any difference.
func compareReplyParse(t *testing.T, stream string, expectCode int, sizes []int) {
	t.Helper()
	c := NewClient(&scriptConn{replies: strings.NewReader("")})
	c.text = textproto.NewConn(struct {
		io.Reader
		io.Writer
		io.Closer
	}{&chunkReader{s: stream, sizes: sizes}, io.Discard, io.NopCloser(nil)})
	got := readReplies(func() (int, string, error) { return c.readResponse(expectCode) })

	upstream := textproto.NewReader(bufio.NewReader(&chunkReader{s: stream, sizes: sizes}))
	want := readReplies(func() (int, string, error) {
		code, msg, err := upstream.ReadResponse(expectCode)
		if protoErr, ok := err.(*textproto.Error); ok {
			err = toSMTPErr(protoErr)
		}
		return code, msg, err
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stream %q, expect %d, reads of %v:\npatched  %q\nupstream %q", stream, expectCode, sizes, got, want)
	}
}

// replyPieces are the parts randomReplies builds replies from: codes good
// and bad, separators, texts, line ends.
var replyPieces = struct{ codes, seps, texts, ends []string }{
	codes: []string{"250", "250", "354", "550", "221", "25", "2500", "abc", "099", "+25", "2 5", ""},
	seps:  []string{" ", " ", "-", "", "\t"},
	texts: []string{"2.1.0 Ok", "Ok", "", "2.0.0 Ok: queued as 4Zx1", "x\ry", strings.Repeat("long ", 1000)},
	ends:  []string{"\r\n", "\r\n", "\n", "\r\r\n", ""},
}

// randomReplies returns a stream of n replies of random pieces.
func randomReplies(rng *rand.Rand, n int) string {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var b strings.Builder
	for range n {
		b.WriteString(pick(replyPieces.codes) + pick(replyPieces.seps) + pick(replyPieces.texts) + pick(replyPieces.ends))
	}
	return b.String()
}

func TestPatchReplyParseSameAsUpstream(t *testing.T) {
	streams := []string{
		"250 2.1.0 Ok\r\n",
		"250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n354 End data with <CR><LF>.<CR><LF>\r\n250 2.0.0 Ok: queued as A1\r\n",
		"250 2.1.0 Ok\r\n250 2.1.0 Ok\r\n250 2.1.0 Ok\r\n250 2.1.0 Ok\r\n250 2.1.0 Ok\r\n250 2.1.0 Ok\r\n",
		"250-first\r\n250-second\r\n250 last\r\n250 next\r\n",
		"550 5.1.1 No such user\r\n",
		"250\r\n", "250 \r\n", "250 ok\n", "250 ok\r\r\n", "250 no line end", "25 short\r\n",
		"099 low\r\n", "+25 sign\r\n", "abc not a reply\r\n", "250-one\r\n251 other code\r\n", "",
		"250 " + strings.Repeat("x", 5000) + "\r\n250 after\r\n",
	}
	sizes := [][]int{{1 << 20}, {1}, {3}, {7, 1, 13}, {4096}}
	for _, expect := range []int{250, 25, 2, 354, 0} {
		for _, s := range streams {
			for _, sz := range sizes {
				compareReplyParse(t, s, expect, sz)
			}
		}
	}
	rng := rand.New(rand.NewPCG(37, 2026))
	for range 3000 {
		stream := randomReplies(rng, 1+rng.IntN(6))
		sz := []int{1 + rng.IntN(40), 1 + rng.IntN(4096)}
		compareReplyParse(t, stream, []int{250, 25, 2, 354}[rng.IntN(4)], sz)
	}
}

// TestPatchReplyParseRepeatedTextsShared: a text met in the last replies
// is returned again, not made anew (the point of the patch), and a new
// text is still its own.
func TestPatchReplyParseRepeatedTextsShared(t *testing.T) {
	stream := strings.Repeat("250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n", 100) + "250 2.0.0 Ok: queued as B2\r\n"
	c := NewClient(&scriptConn{replies: strings.NewReader(stream)})
	// AllocsPerRun's warm-up reads the first 100 replies, which makes the
	// two texts; the 100 replies after them make none.
	allocs := testing.AllocsPerRun(1, func() {
		for range 100 {
			if _, _, err := c.readResponse(250); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("100 replies of 2 texts already met made %v allocations, want 0", allocs)
	}
	_, msg, err := c.readResponse(250)
	if err != nil || msg != "2.0.0 Ok: queued as B2" {
		t.Fatalf("after the repeated replies: %q, %v", msg, err)
	}
}

func FuzzPatchReplyParse(f *testing.F) {
	f.Add("250 2.1.0 Ok\r\n250-a\r\n250 b\r\n", 250, 3)
	f.Add("25 x\r\n099 y\n", 2, 1)
	f.Fuzz(func(t *testing.T, stream string, expect, chunk int) {
		if chunk < 1 || chunk > 1<<16 || len(stream) > 1<<16 {
			return
		}
		compareReplyParse(t, stream, expect, []int{chunk})
	})
}

// TestPatchClientAllocsTransaction: a transaction (MAIL, RCPT, DATA, the
// message, its final reply) against a server that repeats its replies
// allocates only the two command lines, the DataCommand, its response and
// the queue id's text.
func TestPatchClientAllocsTransaction(t *testing.T) {
	const replies = "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n354 End data with <CR><LF>.<CR><LF>\r\n250 2.0.0 Ok: queued as Q\r\n"
	c := NewClient(discardConn{&scriptConn{replies: strings.NewReader(strings.Repeat(replies, 3))}})
	c.didHello = true
	body := []byte("Subject: x\r\n\r\nhello\r\n")
	allocs := testing.AllocsPerRun(2, func() {
		if err := c.Mail("a@x.test", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Rcpt("b@y.test", nil); err != nil {
			t.Fatal(err)
		}
		w, err := c.Data()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		if _, err := w.CloseWithResponse(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != errDataClosedTwice {
			t.Fatalf("second Close: %v", err)
		}
		if len(c.rcpts) != 1 || c.rcpts[0] != "b@y.test" {
			t.Fatalf("recipients of the transaction: %q", c.rcpts)
		}
	})
	if allocs > 5 {
		t.Errorf("a transaction made %v allocations, want at most 5", allocs)
	}
}

// discardConn is a scriptConn that keeps nothing it is written.
type discardConn struct{ *scriptConn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }

// upstreamEHLOExtensions is go-smtp v0.25.1's ehlo parsing, verbatim.
func upstreamEHLOExtensions(msg string) map[string]string {
	ext := make(map[string]string)
	extList := strings.Split(msg, "\n")
	if len(extList) > 1 {
		extList = extList[1:]
		for _, line := range extList {
			args := strings.SplitN(line, " ", 2)
			if len(args) > 1 {
				ext[args[0]] = args[1]
			} else {
				ext[args[0]] = ""
			}
		}
	}
	return ext
}

func TestPatchEHLOExtensionsSameAsUpstream(t *testing.T) {
	msgs := []string{
		"", "host", "host\n", "host\n\n", "\n", "host\nPIPELINING", "host\nSIZE 10240000\nAUTH PLAIN LOGIN\n8BITMIME",
		"host\nSIZE  10\n SIZE\nX a b c\nX again", "host\r\nDSN\r", "host\nä ü",
	}
	rng := rand.New(rand.NewPCG(5, 321))
	pieces := []string{"host", "SIZE", "10240000", "AUTH", " ", "  ", "\n", "\n", "", "X-A", "\r"}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		msgs = append(msgs, b.String())
	}
	for _, msg := range msgs {
		if got, want := ehloExtensions(msg), upstreamEHLOExtensions(msg); !maps.Equal(got, want) {
			t.Fatalf("EHLO text %q: patched %q, upstream %q", msg, got, want)
		}
	}
}

// TestPatchClientAllocsHelloQuit: EHLO and QUIT, now written as lines,
// write the bytes upstream's formatted commands wrote, and the extensions
// come from the reply.
func TestPatchClientAllocsHelloQuit(t *testing.T) {
	conn := &scriptConn{replies: strings.NewReader("220 hi\r\n250-sink.test\r\n250-SIZE 1000\r\n250 8BITMIME\r\n221 Bye\r\n")}
	c := NewClient(conn)
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if ok, size := c.Extension("SIZE"); !ok || size != "1000" {
		t.Errorf("SIZE extension: %v %q", ok, size)
	}
	if ok, _ := c.Extension("8BITMIME"); !ok {
		t.Error("no 8BITMIME extension")
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	if got, want := string(bytes.Join(conn.writes, nil)), "EHLO client.test\r\nQUIT\r\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
