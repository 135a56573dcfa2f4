package imapwire

// Tests of mailbench's runs.patch (internal/goimap/PATCHES.md): Func,
// Text and numberStr with the buffered-run fast path must decode exactly as
// beta.8's byte-by-byte loops, kept below verbatim.

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"
)

func origFunc(dec *Decoder, ptr *string, valid func(ch byte) bool) bool {
	var sb strings.Builder
	for {
		b, ok := dec.readByte()
		if !ok {
			return false
		}

		if !valid(b) {
			dec.mustUnreadByte()
			break
		}

		sb.WriteByte(b)
	}
	if sb.Len() == 0 {
		return false
	}
	*ptr = sb.String()
	return true
}

func origText(dec *Decoder, ptr *string) bool {
	var sb strings.Builder
	for {
		b, ok := dec.readByte()
		if !ok {
			return false
		} else if b == '\r' || b == '\n' {
			dec.mustUnreadByte()
			break
		}
		sb.WriteByte(b)
	}
	if sb.Len() == 0 {
		return false
	}
	*ptr = sb.String()
	return true
}

func origNumberStr(dec *Decoder) (s string, ok bool) {
	var sb strings.Builder
	for {
		ch, ok := dec.readByte()
		if !ok {
			return "", false
		} else if ch < '0' || ch > '9' {
			dec.mustUnreadByte()
			break
		}
		sb.WriteByte(ch)
	}
	if sb.Len() == 0 {
		return "", false
	}
	return sb.String(), true
}

// origExpectNString, origExpectNStringReader and origExpectNList are
// beta.8's, unchanged (nstring.patch).
func origExpectNString(dec *Decoder, ptr *string) bool {
	var s string
	if dec.Atom(&s) {
		if !dec.Expect(s == "NIL", "nstring") {
			return false
		}
		*ptr = ""
		return true
	}
	return dec.ExpectString(ptr)
}

func origExpectNStringReader(dec *Decoder) (lit *LiteralReader, nonSync, ok bool) {
	var s string
	if dec.Atom(&s) {
		if !dec.Expect(s == "NIL", "nstring") {
			return nil, false, false
		}
		return nil, true, true
	}
	if dec.Quoted(&s) {
		return newLiteralReaderFromString(s), true, true
	}
	if lit, nonSync, ok = dec.LiteralReader(); ok {
		return lit, nonSync, true
	} else {
		return nil, false, dec.Expect(false, "nstring")
	}
}

func origExpectNList(dec *Decoder, f func() error) error {
	var s string
	if dec.Atom(&s) {
		if !dec.Expect(s == "NIL", "NIL") {
			return dec.Err()
		}
		return nil
	}
	return dec.ExpectList(f)
}

type runResult struct {
	ok           bool
	s, rest, err string
	readBytes    int64
	crlf         bool
	next         string // what the next Atom reads: the decoder can go on
}

// decodeRuns runs op ("atom", "astring", "text", "number"; twice, so that
// the second call starts wherever the first stopped) on in and returns
// everything observable.
func decodeRuns(in, op string, bufSize int, oneByte bool, maxSize int64, orig bool) runResult {
	dec := testDecoder(in, ConnSideClient, bufSize, oneByte, maxSize)
	var res runResult
	var s1, s2 string
	call := func(ptr *string) bool {
		switch op {
		case "atom":
			if orig {
				return origFunc(dec, ptr, IsAtomChar)
			}
			return dec.Func(ptr, IsAtomChar)
		case "astring":
			if orig {
				return origFunc(dec, ptr, isAStringChar)
			}
			return dec.Func(ptr, isAStringChar)
		case "text":
			if orig {
				return origText(dec, ptr)
			}
			return dec.Text(ptr)
		case "nstring":
			if orig {
				return origExpectNString(dec, ptr)
			}
			return dec.ExpectNString(ptr)
		case "nstringreader":
			var lit *LiteralReader
			var nonSync, ok bool
			if orig {
				lit, nonSync, ok = origExpectNStringReader(dec)
			} else {
				lit, nonSync, ok = dec.ExpectNStringReader()
			}
			*ptr = fmt.Sprintf("nil=%v nonSync=%v", lit == nil, nonSync)
			if lit != nil {
				var b strings.Builder
				io.Copy(&b, lit)
				*ptr += " " + b.String()
			}
			return ok
		case "nlist":
			var items []string
			f := func() error {
				var a string
				if !dec.ExpectNString(&a) {
					return dec.Err()
				}
				items = append(items, a)
				return nil
			}
			var err error
			if orig {
				err = origExpectNList(dec, f)
			} else {
				err = dec.ExpectNList(f)
			}
			*ptr = fmt.Sprint(items, err)
			return err == nil
		default:
			var ok bool
			if orig {
				*ptr, ok = origNumberStr(dec)
			} else {
				*ptr, ok = dec.numberStr()
			}
			return ok
		}
	}
	ok1 := call(&s1)
	dec.SP()
	ok2 := call(&s2)
	res.ok = ok1 && ok2
	res.s = s1 + "|" + s2
	res.readBytes, res.crlf = dec.readBytes, dec.crlf
	if dec.Err() != nil {
		res.err = dec.Err().Error()
	}
	var rest strings.Builder
	for {
		b, err := dec.r.ReadByte()
		if err != nil {
			break
		}
		rest.WriteByte(b)
	}
	res.rest = rest.String()
	return res
}

func checkRuns(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	for _, op := range []string{"atom", "astring", "text", "number", "nstring", "nstringreader", "nlist"} {
		want := decodeRuns(in, op, bufSize, oneByte, maxSize, true)
		got := decodeRuns(in, op, bufSize, oneByte, maxSize, false)
		if got != want {
			t.Fatalf("%s on %q bufio %d oneByte %v MaxSize %d:\n got  %+v\n want %+v", op, in, bufSize, oneByte, maxSize, got, want)
		}
	}
}

var runInputs = []string{
	"", "NIL", "NIL ", "ENVELOPE (", "FLAGS (\\Seen)", "12345 ", "12345", "42)", "a]b c", "OK done\r\n",
	"text without end", "\r\n", " lead", "UID 7 RFC822.SIZE 4096 ", "x\x01y ", "\xff\xfe ", "[CAPABILITY IMAP4rev1]",
	strings.Repeat("A", 40) + " " + strings.Repeat("9", 30) + "\r\n", "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE",
}

func TestPatchRunsMatchOriginal(t *testing.T) {
	for _, in := range runInputs {
		for _, bs := range []int{16, 4096} {
			for _, ob := range []bool{false, true} {
				for _, ms := range []int64{0, 1, 2, 3, 4, 5, 7, 10, 20, 41, 42, 43, 80} {
					checkRuns(t, in, bs, ob, ms)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(5))
	const alphabet = "AZ09NIL \r\n()[]{}\"\\*%\x00\x7f\xc3"
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.Intn(40))
		for j := range b {
			if rng.Intn(3) == 0 {
				b[j] = alphabet[rng.Intn(len(alphabet))]
			} else {
				b[j] = "AZ09"[rng.Intn(4)]
			}
		}
		checkRuns(t, string(b), 16, rng.Intn(3) == 0, int64(rng.Intn(45)))
	}
}

func TestPatchNStringShapes(t *testing.T) {
	// Random sequences of the tokens nstrings and lists are made of.
	tokens := []string{"NIL", "NILX", "nil", `"q"`, `""`, `"a\"b"`, "(", ")", " ", "{2}\r\nab", "X", "\r\n", "NI"}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for k := rng.Intn(8); k >= 0; k-- {
			b.WriteString(tokens[rng.Intn(len(tokens))])
		}
		checkRuns(t, b.String(), []int{16, 4096}[rng.Intn(2)], rng.Intn(3) == 0, int64(rng.Intn(30)))
	}
}

func FuzzPatchRuns(f *testing.F) {
	for _, in := range runInputs {
		f.Add(in, int64(0), false)
	}
	f.Fuzz(func(t *testing.T, in string, maxSize int64, oneByte bool) {
		checkRuns(t, in, 16, oneByte, maxSize)
	})
}

// testDecoder decodes in through a bufio.Reader of bufSize bytes over a
// source that returns half of what is asked, or one byte per read, with
// MaxSize maxSize: the differential tests' decoder.
func testDecoder(in string, side ConnSide, bufSize int, oneByte bool, maxSize int64) *Decoder {
	src := iotest.HalfReader(strings.NewReader(in))
	if oneByte {
		src = iotest.OneByteReader(strings.NewReader(in))
	}
	dec := NewDecoder(bufio.NewReaderSize(src, bufSize), side)
	dec.MaxSize = maxSize
	return dec
}

// unreadRest reads what is left of the decoder's input, byte by byte.
func unreadRest(dec *Decoder) string {
	var rest strings.Builder
	for {
		b, err := dec.r.ReadByte()
		if err != nil {
			return rest.String()
		}
		rest.WriteByte(b)
	}
}
