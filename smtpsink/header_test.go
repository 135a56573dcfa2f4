package smtpsink

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/emersion/go-message/textproto"
)

// errInjected is a read error that the test readers return once or for good.
var errInjected = errors.New("injected read error")

// headerSource describes how the header bytes reach the bufio.Reader: its
// size, the pieces the underlying reader returns, an error after the input
// (io.EOF by default) that repeats or comes once, and the sink's header
// limit in front.
type headerSource struct {
	bufSize   int
	oneByte   bool  // the reader returns one byte per Read
	halves    bool  // iotest.HalfReader
	err       error // after the input; nil: io.EOF
	errOnce   bool  // err once, then io.EOF
	limit     int64 // headerLimitReader's limit; 0: none
	dataError bool  // iotest.DataErrReader: the last data comes with the error
	errAt     int   // > 0: one errInjected after errAt bytes, then the rest of the input
}

func (s headerSource) String() string {
	return fmt.Sprintf("buf=%d oneByte=%v halves=%v err=%v once=%v limit=%d dataErr=%v errAt=%d",
		s.bufSize, s.oneByte, s.halves, s.err, s.errOnce, s.limit, s.dataError, s.errAt)
}

// errAfter returns data, then err (once, then io.EOF, if once).
type errAfter struct {
	r    io.Reader
	err  error
	once bool
	done bool
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF && e.err != nil {
		if e.once && e.done {
			return n, io.EOF
		}
		e.done = true
		return n, e.err
	}
	return n, err
}

// errMidway returns one errInjected (and no data) when at bytes have been
// read, then the rest: a read error that is not the end, as a timeout
// followed by more data would be.
type errMidway struct {
	r    io.Reader
	at   int
	done bool
}

func (e *errMidway) Read(p []byte) (int, error) {
	if !e.done {
		if e.at == 0 {
			e.done = true
			return 0, errInjected
		}
		if len(p) > e.at {
			p = p[:e.at]
		}
	}
	n, err := e.r.Read(p)
	if !e.done {
		e.at -= n
	}
	return n, err
}

func (s headerSource) reader(input string) *bufio.Reader {
	var r io.Reader = strings.NewReader(input)
	if s.errAt > 0 {
		r = &errMidway{r: r, at: s.errAt}
	}
	if s.err != nil {
		r = &errAfter{r: r, err: s.err, once: s.errOnce}
	}
	if s.dataError {
		r = iotest.DataErrReader(r)
	}
	if s.oneByte {
		r = iotest.OneByteReader(r)
	}
	if s.halves {
		r = iotest.HalfReader(r)
	}
	if s.limit > 0 {
		r = &headerLimitReader{r: r, left: s.limit}
	}
	return bufio.NewReaderSize(r, s.bufSize)
}

// checkScanHeader compares scanHeader with textproto.ReadHeader on input
// read through src: the error (the same one, or errMalformedHeader where
// ReadHeader makes its own), the three fields where ReadHeader's header is
// used (nil or io.EOF), and what is left in the reader afterwards (the
// bytes and the error that follows them).
func checkScanHeader(t *testing.T, input string, src headerSource) {
	t.Helper()
	rOrig := src.reader(input)
	hdr, origErr := textproto.ReadHeader(rOrig)
	origRest, origRestErr := io.ReadAll(rOrig)

	rScan := src.reader(input)
	var h headerFields
	err := scanHeader(rScan, &h)
	rest, restErr := io.ReadAll(rScan)

	origMalformed := origErr != nil && strings.HasPrefix(origErr.Error(), "message: malformed")
	switch {
	case origMalformed && err != errMalformedHeader,
		!origMalformed && err != origErr:
		t.Fatalf("%s\ninput %q:\nscanHeader error %v, ReadHeader %v", src, input, err, origErr)
	}
	if err == nil || err == io.EOF {
		h.strings()
		for i, name := range fieldNames {
			if got, want := h.get(i), hdr.Get(name); got != want {
				t.Fatalf("%s\ninput %q:\n%s = %q, ReadHeader's Get says %q", src, input, name, got, want)
			}
		}
	}
	if !bytes.Equal(rest, origRest) || restErr != origRestErr {
		t.Fatalf("%s\ninput %q:\nleft %q (%v), ReadHeader left %q (%v)", src, input, rest, restErr, origRest, origRestErr)
	}
}

// headerCases are headers (with a body after some) that exercise
// ReadHeader's corners.
var headerCases = []string{
	"",
	"\r\n",
	"\n",
	"\r\nbody\r\n",
	"X-Mailbench-Id: abc-1\r\nX-Mailbench-Sent: 2026-03-01T12:00:00.123456789Z\r\nX-Mailbench-Sum: s1\r\n\r\nbody\r\n",
	"From: a@b\r\nX-Mailbench-Id: abc-1\r\nX-Mailbench-Sent: 2026-03-01T12:00:00Z\r\n\r\n",
	// case
	"x-mailbench-id:   spaced  \r\nX-MAILBENCH-SENT: t\r\nx-MaIlBeNcH-sUm:\tv\t\r\n\r\nX-Mailbench-Id: body\r\n",
	// folded
	"Subject: folded\r\n line\r\nX-Mailbench-Id: first\r\n\tsecond\r\n  third\r\nX-Mailbench-Id: dup\r\n\r\n",
	"X-Mailbench-Id:\r\n folded-only\r\n\r\n",
	"X-Mailbench-Id: a\r\n \r\n\t\r\n b\r\n\r\n",
	"X-Mailbench-Id:  \r\n  \r\n\r\nX-Mailbench-Id: second\r\n\r\n",
	// duplicates, empty first occurrence
	"X-Mailbench-Id:\r\nX-Mailbench-Id: second\r\n\r\n",
	"X-Mailbench-Sum: one\r\nX-Mailbench-Sum: two\r\nX-Mailbench-Sent: a\r\nX-Mailbench-Sent: b\r\n\r\n",
	// LF only, mixed, lone CR
	"X-Mailbench-Id: lf only\nX-Mailbench-Sum: s1\n\nbody\n",
	"X-Mailbench-Id: mixed\r\nX-Mailbench-Sum: s1\n\r\nbody",
	"X-Mailbench-Id: cr\r\r\nX-Mailbench-Sum: a\rb\r\n\r\n",
	"X-Mailbench-Id: v\r\n \r\r\n\r\n",
	"X-Mailbench-Id: end\r",
	// no blank line, cut off
	"X-Mailbench-Id: cut off without end",
	"X-Mailbench-Id: cut\r\n folded",
	"X-Mailbench-Id: cut\r\n",
	"X-Mailbench-Id: cut\r\n ",
	// missing fields, near misses
	"X-Mailbench-Idx: no\r\nX-Mailbench-I: no\r\nXX-Mailbench-Id: no\r\n\r\n",
	"Subject: nothing here\r\n\r\n",
	// key blanks and bad keys
	"X-Mailbench-Id : trailing blank in key\r\n\r\n",
	"X-Mailbench-Id\t: tab\r\n\r\n",
	"X-Mailbench Id: inner blank\r\n\r\n",
	"X-Mailbench-Id\r: cr in key\r\n\r\n",
	"X-Mailbench-\x00Id: nul\r\n\r\n",
	"X-Mailbench-Id\x7f: del\r\n\r\n",
	"\x7f: del\r\n\r\n",
	"X-Mailbench-~!#$%&'*+.^_`|: odd but valid\r\n\r\n",
	"X-Mailbench-\xc3\xa9: utf-8\r\n\r\n",
	"X-Mailbench-Id(x): parenthesis is no token\r\n\r\n",
	": empty key\r\nX-Mailbench-Id: after\r\n\r\n",
	" : blank key\r\n\r\n",
	":\r\n\r\n",
	"no colon\r\n\r\nbody",
	"no colon\r\n but: in continuation\r\n\r\n",
	"X-Mailbench-Id: ok\r\nno colon\r\n\r\n",
	"X-Mailbench-Id: ok\r\n\r\nno colon in the body is fine\r\n",
	// first line folded
	" folded first\r\n\r\nx\r\n",
	"\tX-Mailbench-Id: tab first\r\n\r\n",
	" ",
	// colons in values
	"X-Mailbench-Id: a:b:c\r\n\r\n",
	"X-Mailbench-Id::\r\n\r\n",
	// the sink's own header shape
	string(testMessage("m-1", timeSample, "hello\r\n")),
	string(benchBody),
}

var timeSample = time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)

// headerSources cover small buffers (lines longer than the buffer come in
// parts), one byte per read, errors after the data (once or for good, with
// the last data or after it) and the header limit.
var headerSources = func() []headerSource {
	var out []headerSource
	for _, size := range []int{16, 17, 19, 32, 64, 32 << 10} {
		out = append(out,
			headerSource{bufSize: size},
			headerSource{bufSize: size, oneByte: true},
			headerSource{bufSize: size, halves: true, err: errInjected},
			headerSource{bufSize: size, oneByte: true, err: errInjected, errOnce: true},
			headerSource{bufSize: size, err: errInjected, dataError: true},
			headerSource{bufSize: size, err: errInjected, errOnce: true, dataError: true},
		)
		for _, at := range []int{1, 2, 7, 16, 17, 18, 22, 30, 35, 41} {
			out = append(out, headerSource{bufSize: size, errAt: at}, headerSource{bufSize: size, oneByte: true, errAt: at})
		}
		for _, limit := range []int64{1, 5, 20, 33, 40, 64} {
			out = append(out, headerSource{bufSize: size, limit: limit}, headerSource{bufSize: size, oneByte: true, limit: limit})
		}
	}
	return out
}()

func TestScanHeaderMatchesReadHeader(t *testing.T) {
	for _, input := range headerCases {
		for _, src := range headerSources {
			checkScanHeader(t, input, src)
		}
	}
}

// TestScanHeaderMatchesReadHeaderRandom compares on headers assembled from
// the pieces that matter: the fields' names in any case, near misses,
// blanks, colons, folding, CR, LF, CR LF, cut-offs and long lines.
func TestScanHeaderMatchesReadHeaderRandom(t *testing.T) {
	pieces := []string{
		"X-Mailbench-Id", "x-mailbench-id", "X-MAILBENCH-SENT", "X-Mailbench-Sent", "X-Mailbench-Sum", "x-mailbench-SUM",
		"X-Mailbench-Idx", "Subject", "From", "X", "",
		":", ": ", " ", "\t", "  ", "value", "v1", "a:b", "\r\n", "\n", "\r", "\r\n ", "\r\n\t", "\n ", "\r\n\r\n",
		"\x00", "\xff", "(", strings.Repeat("y", 40), strings.Repeat(" ", 20),
	}
	rng := rand.New(rand.NewSource(11))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		var b strings.Builder
		for k := rng.Intn(24); k >= 0; k-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		src := headerSources[rng.Intn(len(headerSources))]
		checkScanHeader(t, b.String(), src)
	}
}

// FuzzScanHeader compares scanHeader with textproto.ReadHeader on arbitrary
// input, with a small buffer (lines in parts) and the default one.
func FuzzScanHeader(f *testing.F) {
	for _, h := range headerCases {
		f.Add([]byte(h), uint8(0))
	}
	f.Fuzz(func(t *testing.T, input []byte, how uint8) {
		src := headerSources[int(how)%len(headerSources)]
		checkScanHeader(t, string(input), src)
	})
}

// BenchmarkScanHeader reads the header of the benchmark's message (the
// shape smtp-source and mailbench send) with scanHeader and, for
// comparison, with textproto.ReadHeader.
func BenchmarkScanHeader(b *testing.B) {
	for _, impl := range []string{"scan", "textproto"} {
		b.Run(impl, func(b *testing.B) {
			r := bytes.NewReader(benchBody)
			br := bufio.NewReaderSize(r, 32<<10)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(benchBody)
				br.Reset(r)
				if impl == "scan" {
					var h headerFields
					if err := scanHeader(br, &h); err != nil {
						b.Fatal(err)
					}
					h.strings()
					if h.get(fieldSent) == "" {
						b.Fatal("no Sent")
					}
				} else {
					hdr, err := textproto.ReadHeader(br)
					if err != nil {
						b.Fatal(err)
					}
					if hdr.Get(HeaderSent) == "" {
						b.Fatal("no Sent")
					}
				}
			}
		})
	}
}
