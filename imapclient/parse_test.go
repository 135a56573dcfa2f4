package imapclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
	"github.com/mailbench/mailbench/measure"
)

func TestSplitter(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ends []int
		idle bool // at a boundary afterwards
	}{
		{"empty", "", nil, true},
		{"one line", "* OK hi\r\n", []int{9}, true},
		{"two lines", "* 1 EXISTS\r\nA1 OK\r\n", []int{12, 19}, true},
		{"partial line", "* OK h", nil, false},
		{"literal", "* 1 FETCH (BODY[] {5}\r\nab\r\nc)\r\nT2 OK\r\n", []int{31, 38}, true},
		{"literal with newlines spanning", "* LSUB () \"/\" {4}\r\n\n\n\n\n\r\n", []int{25}, true},
		{"zero literal", "* X {0}\r\n\r\n", []int{11}, true},
		{"unfinished literal", "* X {10}\r\nabc", nil, false},
		{"braces not at end", "* OK {5} text\r\n", []int{15}, true},
		{"bare LF", "* OK\n* NO\n", []int{5, 10}, true},
		{"huge literal claim", "* X {99999999999999999999}\r\n", []int{28}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s splitter
			ends := s.feed([]byte(tt.in))
			if !slices.Equal(ends, tt.ends) || s.atBoundary() != tt.idle {
				t.Errorf("ends %v idle %v, want %v %v", ends, s.atBoundary(), tt.ends, tt.idle)
			}
		})
	}
}

// feedChunks feeds b to a fresh splitter cut at the given points and
// returns the absolute response ends.
func feedChunks(b []byte, cuts []int) ([]int, bool) {
	var s splitter
	var ends []int
	prev := 0
	for _, c := range append(cuts, len(b)) {
		if c < prev || c > len(b) {
			continue
		}
		for _, e := range s.feed(b[prev:c]) {
			ends = append(ends, prev+e)
		}
		prev = c
	}
	return ends, s.atBoundary()
}

// FuzzSplitter: how the stream is cut into reads never changes where
// responses end.
func FuzzSplitter(f *testing.F) {
	f.Add([]byte("* 1 FETCH (BODY[] {5}\r\nab\r\nc)\r\nT2 OK\r\n"), uint8(3), uint8(7))
	f.Add([]byte("* LSUB () \"/\" {3}\r\nabc\r\nMBL1 OK\r\n"), uint8(17), uint8(18))
	f.Add([]byte("* OK {12345678901234567890123}\r\nx\n"), uint8(1), uint8(30))
	f.Fuzz(func(t *testing.T, b []byte, c1, c2 uint8) {
		whole, idle := feedChunks(b, nil)
		cuts := []int{int(c1) % (len(b) + 1), int(c2) % (len(b) + 1)}
		slices.Sort(cuts)
		parts, idle2 := feedChunks(b, cuts)
		if !slices.Equal(whole, parts) || idle != idle2 {
			t.Fatalf("cuts %v: ends %v/%v idle %v/%v", cuts, whole, parts, idle, idle2)
		}
		for i, e := range whole {
			if e <= 0 || e > len(b) || b[e-1] != '\n' || (i > 0 && e <= whole[i-1]) {
				t.Fatalf("bad end %d in %v", e, whole)
			}
		}
	})
}

func TestParseLSUB(t *testing.T) {
	tests := []struct {
		in   string
		name string
		ok   bool
	}{
		{"* LSUB () \"/\" INBOX\r\n", "INBOX", true},
		{"* LSUB () \"/\" inbox\r\n", "INBOX", true},
		{"* lsub (\\Noselect \\HasChildren) \".\" Projects.Alpha\r\n", "Projects.Alpha", true},
		{"* LSUB () NIL \"with space\"\r\n", "with space", true},
		{"* LSUB () \"/\" \"q\\\"uote\\\\d\"\r\n", `q"uote\d`, true},
		{"* LSUB () \"/\" {5}\r\na b c\r\n", "a b c", true},
		{"* LSUB () \"/\" Entw&APw-rfe\r\n", "Entwürfe", true},
		{"* LSUB () \"/\" A&-B\r\n", "A&B", true},
		{"* LSUB () \"/\" Bad&AB\r\n", "Bad&AB", true}, // invalid mUTF-7 stays raw
		{"* LIST () \"/\" INBOX\r\n", "", false},
		{"* LSUB \"/\" INBOX\r\n", "", false},
		{"* LSUB () \"/\" {9}\r\nshort\r\n", "", false},
		{"* LSUB () \"/\" two words\r\n", "", false},
		{"* LSUB () \"/\" \"open\r\n", "", false},
		{"* LSUB ()", "", false},
	}
	for _, tt := range tests {
		name, ok := parseLSUB([]byte(tt.in))
		if name != tt.name || ok != tt.ok {
			t.Errorf("parseLSUB(%q) = %q, %v; want %q, %v", tt.in, name, ok, tt.name, tt.ok)
		}
	}
}

func FuzzParseLSUB(f *testing.F) {
	f.Add([]byte("* LSUB () \"/\" {5}\r\na b c\r\n"))
	f.Add([]byte("* LSUB (\\X) NIL \"a\\\"b\"\r\n"))
	f.Add([]byte("* LSUB () \"/\" &AGE-\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, ok := parseLSUB(b)
		if !ok && name != "" {
			t.Fatalf("name %q without ok", name)
		}
		if ok && !bytes.HasSuffix(b, []byte("\n")) {
			t.Fatalf("accepted %q without a line end", b)
		}
	})
}

// TestTransportTap drives the transport directly: the bytes go-imap reads
// are exactly the stream without the tapped responses, however the stream
// is cut into reads.
func TestTransportTap(t *testing.T) {
	before := "* 2 EXISTS\r\n* 1 FETCH (BODY[] {12}\r\n* LSUB x\r\n\r\n)\r\n"
	during := "* 3 EXISTS\r\n* LSUB () \"/\" {3}\r\nA\nB\r\n* 1 RECENT\r\n* LSUB () \"/\" C\r\nMBL1 OK done\r\n"
	after := "* 4 EXISTS\r\nT9 OK x\r\n"
	want := before + "* 3 EXISTS\r\n* 1 RECENT\r\n" + after
	for _, chunk := range []int{1, 2, 5, 13, 4096} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			tr := newTransport(client, []byte("* OK replayed\r\n"))
			stream := before + during + after
			// The tap starts after the first two bytes of "before", i.e.
			// mid-response: those responses must still pass through whole.
			go func() {
				for i := 0; i < len(stream); i += chunk {
					server.Write([]byte(stream[i:min(i+chunk, len(stream))]))
				}
				server.Close()
			}()
			var got bytes.Buffer
			buf := make([]byte, 64)
			n, _ := io.ReadFull(tr, buf[:2+len("* OK replayed\r\n")])
			got.Write(buf[:n])
			tap, err := tr.startTap("MBL1")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(&got, tr); err != nil {
				t.Fatal(err)
			}
			<-tap.done
			if tap.err != nil || !slices.Equal(tap.names, []string{"A\nB", "C"}) {
				t.Errorf("tap: %v %q", tap.err, tap.names)
			}
			if got.String() != "* OK replayed\r\n"+want {
				t.Errorf("go-imap read\n%q\nwant\n%q", got.String(), "* OK replayed\r\n"+want)
			}
			if !errors.Is(tr.err(), io.EOF) {
				t.Errorf("recorded I/O error %v, want EOF", tr.err())
			}
		})
	}
}

func TestBodySplitter(t *testing.T) {
	tests := []struct{ msg, header, body string }{
		{"A: b\r\n\r\nbody\r\n", "A: b\r\n\r\n", "body\r\n"},
		{"A: b\n\nbody", "A: b\n\n", "body"},
		{"\r\nbody", "\r\n", "body"},
		{"\nbody", "\n", "body"},
		{"A: b\r\nC: d\r\n", "A: b\r\nC: d\r\n", ""},
		{"A: b\r\n\r\n\r\n\r\nx", "A: b\r\n\r\n", "\r\n\r\nx"},
		{"", "", ""},
	}
	for _, tt := range tests {
		for chunk := 1; chunk <= len(tt.msg)+1; chunk++ {
			var body bytes.Buffer
			bs := &bodySplitter{body: &body}
			for i := 0; i < len(tt.msg); i += chunk {
				bs.Write([]byte(tt.msg[i:min(i+chunk, len(tt.msg))]))
			}
			if string(bs.header) != tt.header || body.String() != tt.body {
				t.Errorf("%q by %d: header %q body %q, want %q %q", tt.msg, chunk, bs.header, body.String(), tt.header, tt.body)
			}
		}
	}
}

// FuzzBodySplitter compares the streaming splitter with a whole-message
// reference, for any cut.
func FuzzBodySplitter(f *testing.F) {
	f.Add([]byte("A: b\r\n\r\nbody\r\n"), uint16(3))
	f.Add([]byte("\n\n\r\n"), uint16(1))
	f.Fuzz(func(t *testing.T, msg []byte, cut uint16) {
		var wantHeader, wantBody []byte
		switch {
		case bytes.HasPrefix(msg, []byte("\r\n")):
			wantHeader, wantBody = msg[:2], msg[2:]
		case bytes.HasPrefix(msg, []byte("\n")):
			wantHeader, wantBody = msg[:1], msg[1:]
		default:
			i := bytes.Index(msg, []byte("\n\n"))
			j := bytes.Index(msg, []byte("\n\r\n"))
			switch {
			case i < 0 && j < 0:
				wantHeader = msg
			case j < 0 || (i >= 0 && i < j):
				wantHeader, wantBody = msg[:i+2], msg[i+2:]
			default:
				wantHeader, wantBody = msg[:j+3], msg[j+3:]
			}
		}
		c := int(cut) % (len(msg) + 1)
		var body bytes.Buffer
		bs := &bodySplitter{body: &body}
		bs.Write(msg[:c])
		bs.Write(msg[c:])
		if !bytes.Equal(bs.header, wantHeader) || !bytes.Equal(body.Bytes(), wantBody) {
			t.Fatalf("cut %d: header %q body %q, want %q %q", c, bs.header, body.Bytes(), wantHeader, wantBody)
		}
	})
}

var testTime = time.Date(2026, 5, 6, 7, 8, 9, 10, time.UTC)

func TestBodySumMatchesMsgsum(t *testing.T) {
	msg := testMessage("x", testTime, "hello\r\n.dot\r\n")
	hw, sum := msgsum.NewBodyHasher()
	bs := &bodySplitter{body: hw}
	bs.Write(msg)
	if got, want := sum(), msgsum.BodySum([]byte("hello\r\n.dot\r\n")); got != want {
		t.Errorf("sum %s, want %s", got, want)
	}
	if h := parseHeader(bs.header); h.Get(HeaderID) != "x" || h.Get(HeaderSum) != sum() {
		t.Errorf("header %v", h)
	}
}

func TestRedact(t *testing.T) {
	const pw = "hunter2"
	tests := []struct {
		name string
		err  error
	}{
		{"protocol", fmt.Errorf("x: %w", &measure.ProtocolError{Op: "LOGIN", Reply: "NO bad " + pw})},
		{"timeout", fmt.Errorf("after %s: %w", pw, measure.ErrTimeout)},
		{"connection", fmt.Errorf("%s: %w", pw, io.ErrUnexpectedEOF)},
		{"cancelled", fmt.Errorf("%s: %w", pw, context.Canceled)},
		{"other", errors.New("weird " + pw)},
		{"clean", errors.New("nothing secret")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact(tt.err, pw)
			if strings.Contains(got.Error(), pw) {
				t.Errorf("%q still holds the password", got)
			}
			for e := got; e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), pw) {
					t.Errorf("wrapped %q holds the password", e)
				}
			}
			if measure.Classify(got) != measure.Classify(tt.err) {
				t.Errorf("class %q, want %q", measure.Classify(got), measure.Classify(tt.err))
			}
			if errors.Is(tt.err, context.Canceled) != errors.Is(got, context.Canceled) {
				t.Errorf("context.Canceled lost")
			}
		})
	}
	if redact(nil, pw) != nil {
		t.Error("redact(nil) != nil")
	}
}

func TestDecodeMUTF7(t *testing.T) {
	tests := []struct {
		in, out string
		ok      bool
	}{
		{"plain", "plain", true},
		{"A&-B", "A&B", true},
		{"&AGEAYgBj-", "abc", true},
		{"Entw&APw-rfe", "Entwürfe", true},
		{"&ZeVnLIqe-", "日本語", true},
		{"&AGE", "", false},
		{"&A-", "", false},
	}
	for _, tt := range tests {
		got, err := decodeMUTF7(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.out) {
			t.Errorf("decodeMUTF7(%q) = %q, %v", tt.in, got, err)
		}
	}
}

// chunkConn is a net.Conn whose reads return the given stream in chunks of
// chunk bytes, then io.EOF.
type chunkConn struct {
	net.Conn
	stream []byte
	chunk  int
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.stream) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.stream[:min(c.chunk, len(c.stream))])
	c.stream = c.stream[n:]
	return n, nil
}

func (c *chunkConn) Close() error { return nil }

// FuzzTransportTap feeds an arbitrary server stream through a transport
// whose LSUB tap is active from the start: what go-imap reads is the
// stream minus the LSUB responses and the tagged completion (everything
// after the completion passes through), whatever the read sizes.
func FuzzTransportTap(f *testing.F) {
	f.Add([]byte("* 3 EXISTS\r\n* LSUB () \"/\" {3}\r\nA\nB\r\nMBL1 OK done\r\n* 4 EXISTS\r\n"), uint8(3))
	f.Add([]byte("* LSUB () NIL x\r\nMBL1 NO [X] y\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		var want []byte
		var wantNames []string
		var s splitter
		prev, tapped := 0, true
		for _, e := range s.feed(stream) {
			resp := stream[prev:e]
			prev = e
			if !tapped {
				want = append(want, resp...)
				continue
			}
			if bytes.HasPrefix(resp, []byte("MBL1 ")) {
				tapped = false
				continue
			}
			if name, ok := parseLSUB(resp); ok {
				wantNames = append(wantNames, name)
				continue
			}
			want = append(want, resp...)
		}
		if !tapped {
			want = append(want, stream[prev:]...)
		}
		tr := newTransport(&chunkConn{stream: stream, chunk: int(chunk)%16 + 1}, nil)
		tap, err := tr.startTap("MBL1")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(tr)
		if len(stream)-prev > maxTappedResponse && tapped {
			return // the tap gave up on an oversized response
		}
		if err != nil {
			t.Fatalf("ReadAll: %v", err)
		}
		select {
		case <-tap.done:
		default:
			t.Fatal("tap not finished at EOF")
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("go-imap read %q, want %q", got, want)
		}
		if !tapped && !slices.Equal(tap.names, wantNames) {
			t.Fatalf("names %q, want %q", tap.names, wantNames)
		}
	})
}

// TestHeaderFieldMatchesTextproto checks headerField against parseHeader
// (net/textproto) on well-formed, folded, truncated and odd headers.
func TestHeaderFieldMatchesTextproto(t *testing.T) {
	headers := []string{
		"From: a@b\r\nX-Mailbench-Id: abc-1\r\nX-Mailbench-Sent: 2026-03-01T12:00:00Z\r\n\r\n",
		"x-mailbench-id:   spaced  \r\nX-MAILBENCH-SENT: t\r\n\r\nX-Mailbench-Id: body\r\n",
		"Subject: folded\r\n line\r\nX-Mailbench-Id: first\r\n\tsecond\r\n  third\r\nX-Mailbench-Id: dup\r\n\r\n",
		"X-Mailbench-Id: lf only\nX-Mailbench-Sum: s1\n\n",
		"X-Mailbench-Id: cut off without end",
		"X-Mailbench-Id:\r\nX-Mailbench-Sum: \r\n\r\n",
		"X-Mailbench-Idx: no\r\nX-Mailbench-I: no\r\n\r\n",
		"",
	}
	for _, h := range headers {
		want := parseHeader([]byte(h))
		for _, name := range []string{HeaderID, HeaderSent, HeaderSum, "Subject", "From"} {
			if got := headerField([]byte(h), name); got != want.Get(name) {
				t.Errorf("headerField(%q, %s) = %q, textproto says %q", h, name, got, want.Get(name))
			}
		}
	}
}

// TestHeaderFieldBytesMatches checks that headerFieldBytes gives
// headerField's value, as bytes, on the same headers.
func TestHeaderFieldBytesMatches(t *testing.T) {
	headers := []string{
		"From: a@b\r\nX-Mailbench-Id: abc-1\r\nX-Mailbench-Sent: 2026-03-01T12:00:00Z\r\n\r\n",
		"Subject: folded\r\n line\r\nX-Mailbench-Id: first\r\n\tsecond\r\n  third\r\nX-Mailbench-Id: dup\r\n\r\n",
		"X-Mailbench-Id: cut off without end", "X-Mailbench-Id:\r\n \r\n\r\n", "",
	}
	for _, h := range headers {
		for _, name := range []string{HeaderID, HeaderSent, "Subject", "From"} {
			if got, want := string(headerFieldBytes([]byte(h), name)), headerField([]byte(h), name); got != want {
				t.Errorf("headerFieldBytes(%q, %s) = %q, headerField %q", h, name, got, want)
			}
		}
	}
}

// TestSentParsesAsTimeParse checks that the X-Mailbench-Sent stamps the
// generator writes (UTC, RFC 3339 with nanoseconds) read with
// Time.UnmarshalText, from bytes, give what time.Parse(RFC3339Nano) gave,
// and that what either refuses stays unset.
func TestSentParsesAsTimeParse(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var stamps []string
	for range 2000 {
		ts := time.Unix(rng.Int63n(4e9), rng.Int63n(1e9)*int64(rng.Intn(2)))
		stamps = append(stamps, string(ts.UTC().AppendFormat(nil, time.RFC3339Nano)))
	}
	stamps = append(stamps, "2026-12-05T12:00:00+01:00", "2026-12-05T12:00:00.5-07:30", "not a time", "2026-12-05", "")
	for _, s := range stamps {
		want, werr := time.Parse(time.RFC3339Nano, s)
		var got time.Time
		gerr := got.UnmarshalText([]byte(s))
		if (werr == nil) != (gerr == nil) || !got.Equal(want) || got.Location().String() != want.Location().String() {
			t.Errorf("%q: UnmarshalText %v (%v), time.Parse %v (%v)", s, got, gerr, want, werr)
		}
	}
}
