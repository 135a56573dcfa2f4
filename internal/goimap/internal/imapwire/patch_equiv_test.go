package imapwire

// Tests of the mailbench patch (internal/goimap/PATCHES.md): Quoted with
// the bulk run (quotedRun) must decode exactly as beta.8's byte-by-byte loop,
// kept below as origQuoted, and ExpectSpecial must fail exactly as before.

import (
	"bufio"
	"math/rand"
	"strings"
	"testing"
)

// origQuoted is Decoder.Quoted of go-imap v2.0.0-beta.8, unchanged.
func origQuoted(dec *Decoder, ptr *string) bool {
	if !dec.Special('"') {
		return false
	}
	var sb strings.Builder
	for {
		ch, ok := dec.readByte()
		if !ok {
			return false
		}
		if ch == '"' {
			break
		}
		if ch == '\\' {
			ch, ok = dec.readByte()
			if !ok {
				return false
			}
		}
		sb.WriteByte(ch)
	}
	*ptr = sb.String()
	return true
}

type quotedResult struct {
	ok        bool
	s, rest   string
	err       string
	readBytes int64
}

func decodeQuoted(in string, bufSize int, oneByte bool, maxSize int64, orig bool) quotedResult {
	dec := testDecoder(in, ConnSideClient, bufSize, oneByte, maxSize)
	var res quotedResult
	var s string
	if orig {
		res.ok = origQuoted(dec, &s)
	} else {
		res.ok = dec.Quoted(&s)
	}
	res.s, res.readBytes = s, dec.readBytes
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

func checkQuoted(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	want := decodeQuoted(in, bufSize, oneByte, maxSize, true)
	got := decodeQuoted(in, bufSize, oneByte, maxSize, false)
	if got != want {
		t.Fatalf("input %q bufio %d oneByte %v MaxSize %d:\n got  %+v\n want %+v", in, bufSize, oneByte, maxSize, got, want)
	}
}

var quotedInputs = []string{
	`""`, `"a"`, `"hello world" rest`, `"esc\"aped\\x" NIL`, `"\\"`, `"unterminated`,
	`"trailing backslash\`, `atom`, `"a\`, `"` + strings.Repeat("x", 100) + `")`,
	`"=?utf-8?q?caf=C3=A9?=" "user" NIL "example.test")`, `"a\"b\"c"`, "\"line\r\nbreak\"",
}

func TestPatchQuotedMatchesOriginal(t *testing.T) {
	for _, in := range quotedInputs {
		for _, bs := range []int{16, 4096} {
			for _, ob := range []bool{false, true} {
				for _, ms := range []int64{0, 1, 2, 3, 5, 10, 50, 101, 102, 103} {
					checkQuoted(t, in, bs, ob, ms)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 30000; i++ {
		b := make([]byte, rng.Intn(40))
		for j := range b {
			b[j] = `"\ab`[rng.Intn(4)]
		}
		if rng.Intn(2) == 0 && len(b) > 0 {
			b[0] = '"'
		}
		checkQuoted(t, string(b), 16, rng.Intn(3) == 0, int64(rng.Intn(30)))
	}
}

func FuzzPatchQuoted(f *testing.F) {
	for _, in := range quotedInputs {
		f.Add(in, int64(0), false)
	}
	f.Fuzz(func(t *testing.T, in string, maxSize int64, oneByte bool) {
		checkQuoted(t, in, 16, oneByte, maxSize)
	})
}

func TestPatchExpectSpecialError(t *testing.T) {
	dec := NewDecoder(bufio.NewReader(strings.NewReader("x")), ConnSideClient)
	if dec.ExpectSpecial('(') {
		t.Fatal("ExpectSpecial('(') accepted x")
	}
	if got, want := dec.Err().Error(), `imapwire: expected '(', got "x"`; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
	dec = NewDecoder(bufio.NewReader(strings.NewReader("(")), ConnSideClient)
	if !dec.ExpectSpecial('(') || dec.Err() != nil {
		t.Fatalf("ExpectSpecial('(') on '(': %v", dec.Err())
	}
}
