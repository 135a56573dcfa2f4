package imapwire

// Tests of mailbench's peek-byte.patch (internal/goimap/PATCHES.md):
// acceptByte (Special, CRLF, List) and SP that look at buffered bytes
// must decode exactly as beta.8's, which read a byte and read it back,
// kept below verbatim.

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func origAcceptByte(dec *Decoder, want byte) bool {
	got, ok := dec.readByte()
	if !ok {
		return false
	} else if got != want {
		dec.mustUnreadByte()
		return false
	}
	return true
}

func origSP(dec *Decoder) bool {
	if origAcceptByte(dec, ' ') {
		b, ok := dec.readByte()
		if !ok {
			return false
		}
		dec.mustUnreadByte()
		return b != '\r' && b != '\n'
	}
	b, ok := dec.readByte()
	if !ok {
		return false
	}
	dec.mustUnreadByte()
	return b == '('
}

// decodePeeks runs the program prog over in: 's' is SP, 'a' an Atom,
// any other byte Special of that byte. It returns everything observable:
// each call's result, the atoms, readBytes, crlf, the error and the
// unread rest.
func decodePeeks(in, prog string, bufSize int, oneByte bool, maxSize int64, orig bool) string {
	dec := testDecoder(in, ConnSideClient, bufSize, oneByte, maxSize)
	var out strings.Builder
	for i := 0; i < len(prog); i++ {
		var ok bool
		switch c := prog[i]; c {
		case 's':
			if orig {
				ok = origSP(dec)
			} else {
				ok = dec.SP()
			}
		case 'a':
			var s string
			ok = dec.Atom(&s)
			out.WriteString(s)
		default:
			if orig {
				ok = origAcceptByte(dec, c)
			} else {
				ok = dec.acceptByte(c)
			}
		}
		fmt.Fprintf(&out, "%v crlf=%v n=%d;", ok, dec.crlf, dec.readBytes)
	}
	if dec.Err() != nil {
		out.WriteString("err=" + dec.Err().Error())
	}
	out.WriteString(" rest=" + unreadRest(dec))
	return out.String()
}

func checkPeeks(t *testing.T, in, prog string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	want := decodePeeks(in, prog, bufSize, oneByte, maxSize, true)
	got := decodePeeks(in, prog, bufSize, oneByte, maxSize, false)
	if got != want {
		t.Fatalf("%q on %q bufio %d oneByte %v MaxSize %d:\n got  %s\n want %s", prog, in, bufSize, oneByte, maxSize, got, want)
	}
}

func TestPatchPeekByteMatchesOriginal(t *testing.T) {
	inputs := []string{"", " ", "  ", " (", "(", " \r\n", "\r\n", "\n", " x", "* 1 FETCH (UID 7 FLAGS (\\Seen))\r\n", ")"}
	progs := []string{"s", "ss", "(s", "s(", "*sas(", "\r\n", " \r\n", "*sasas(asas(a))\r\n", "sa)", "(a)"}
	for _, in := range inputs {
		for _, prog := range progs {
			for _, bs := range []int{16, 4096} {
				for _, ob := range []bool{false, true} {
					for ms := int64(0); ms < 12; ms++ {
						checkPeeks(t, in, prog, bs, ob, ms)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(11))
	const alphabet = " ()\r\n*AZ9\\"
	const ops = " ()\r\n*sa"
	for i := 0; i < 50000; i++ {
		in := make([]byte, rng.Intn(24))
		for j := range in {
			in[j] = alphabet[rng.Intn(len(alphabet))]
		}
		prog := make([]byte, 1+rng.Intn(8))
		for j := range prog {
			prog[j] = ops[rng.Intn(len(ops))]
		}
		checkPeeks(t, string(in), string(prog), 16, rng.Intn(3) == 0, int64(rng.Intn(26)))
	}
}

func FuzzPatchPeekByte(f *testing.F) {
	f.Add("* 1 FETCH (UID 7)\r\n", "*sas(asa)\r\n", int64(0), false)
	f.Add(" \r\n", "s", int64(1), true)
	f.Fuzz(func(t *testing.T, in, prog string, maxSize int64, oneByte bool) {
		if len(prog) > 64 {
			prog = prog[:64]
		}
		checkPeeks(t, in, prog, 16, oneByte, maxSize)
	})
}
