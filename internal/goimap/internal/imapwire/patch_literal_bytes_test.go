package imapwire

// Tests of mailbench's literal-bytes.patch (internal/goimap/PATCHES.md):
// ExpectNStringBytes must return what ExpectNStringReader followed by
// imapclient's former readSmallLiteral (kept below verbatim) returned: the
// same bytes for a string or literal of at most max bytes, a reader of
// the same bytes beyond that, NIL as nil, the same decoder state after,
// and the same errors.

import (
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
)

func origReadSmallLiteral(lit *LiteralReader) ([]byte, error) {
	b := make([]byte, lit.Size())
	if _, err := io.ReadFull(lit, b); err != nil {
		return nil, fmt.Errorf("in literal: %v", err)
	}
	var one [1]byte
	if n, err := lit.Read(one[:]); n != 0 || err != io.EOF {
		return nil, fmt.Errorf("in literal: got more than %d bytes", len(b))
	}
	return b, nil
}

// decodeNStringBytes reads two nstrings from in, separated by SP, with
// max as the largest one read whole, and returns everything observable.
func decodeNStringBytes(in string, max int64, side ConnSide, bufSize int, oneByte bool, maxSize int64, orig bool) string {
	dec := testDecoder(in, side, bufSize, oneByte, maxSize)
	var out strings.Builder
	for range 2 {
		var (
			b   []byte
			lit *LiteralReader
			ok  bool
			err error
		)
		if orig {
			lit, _, ok = dec.ExpectNStringReader()
			if ok && lit != nil && lit.Size() <= max {
				b, err = origReadSmallLiteral(lit)
				lit = nil
				if err != nil {
					ok = false
				}
			}
		} else {
			b, lit, ok = dec.ExpectNStringBytes(max)
			if !ok && dec.Err() != nil && strings.HasPrefix(dec.Err().Error(), "in literal: ") {
				err = dec.Err()
			}
		}
		fmt.Fprintf(&out, "ok=%v bytes=%v %q", ok, b != nil, b)
		if lit != nil {
			rest, rerr := io.ReadAll(lit)
			fmt.Fprintf(&out, " lit %d %q %v", lit.Size(), rest, rerr)
		}
		if err != nil {
			fmt.Fprintf(&out, " readErr=%v", err)
		}
		fmt.Fprintf(&out, " n=%d crlf=%v literal=%v; ", dec.readBytes, dec.crlf, dec.literal)
		if !ok {
			break
		}
		dec.SP()
	}
	if dec.Err() != nil && !strings.HasPrefix(dec.Err().Error(), "in literal: ") {
		out.WriteString("err=" + dec.Err().Error())
	}
	out.WriteString(" rest=")
	if !dec.literal {
		out.WriteString(unreadRest(dec))
	}
	return out.String()
}

func checkNStringBytes(t *testing.T, in string, max int64, side ConnSide, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	want := decodeNStringBytes(in, max, side, bufSize, oneByte, maxSize, true)
	got := decodeNStringBytes(in, max, side, bufSize, oneByte, maxSize, false)
	if got != want {
		t.Fatalf("%q max %d side %v bufio %d oneByte %v MaxSize %d:\n got  %s\n want %s", in, max, side, bufSize, oneByte, maxSize, got, want)
	}
}

var nstringBytesInputs = []string{
	"NIL NIL", `"" "ab"`, "{0}\r\n {3}\r\nabc", "{5}\r\nhello {6}\r\nworld!", "{5}\r\nhel", "{3+}\r\nabc NIL",
	`"a\"b" {2}` + "\r\nxy", "NILX", "nil {1}\r\nz", "{x}\r\nab", "{3}ab", "{99999999999999999999}\r\n", "(", "",
	"{12}\r\nline1\r\nline2 \"q\"",
}

func TestPatchLiteralBytesMatchesOriginal(t *testing.T) {
	for _, in := range nstringBytesInputs {
		for _, max := range []int64{0, 1, 3, 5, 8192} {
			for _, side := range []ConnSide{ConnSideClient, ConnSideServer} {
				for _, bs := range []int{16, 4096} {
					for _, ob := range []bool{false, true} {
						for _, ms := range []int64{0, 3, 8, 20} {
							checkNStringBytes(t, in, max, side, bs, ob, ms)
						}
					}
				}
			}
		}
	}
	tokens := []string{"NIL", `"q"`, `""`, "{0}\r\n", "{3}\r\nabc", "{4}\r\nab\r\n", "{2}\r\na", " ", "X", "\r\n", "{1+}\r\n."}
	rng := rand.New(rand.NewSource(17))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for k := rng.Intn(5); k >= 0; k-- {
			b.WriteString(tokens[rng.Intn(len(tokens))])
		}
		checkNStringBytes(t, b.String(), int64(rng.Intn(6)), ConnSide(rng.Intn(2)), 16, rng.Intn(3) == 0, int64(rng.Intn(25)))
	}
}

func FuzzPatchLiteralBytes(f *testing.F) {
	for _, in := range nstringBytesInputs {
		f.Add(in, int64(4), false)
	}
	f.Fuzz(func(t *testing.T, in string, max int64, oneByte bool) {
		checkNStringBytes(t, in, max, ConnSideClient, 16, oneByte, 0)
	})
}
