package imapwire

// Tests of mailbench's response-number.patch (internal/goimap/PATCHES.md):
// AtomNumber either reads what Atom reads, returning the number
// strconv.ParseUint gives for that atom, or reads nothing.

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// decodeAtomNumber reads in with AtomNumber then, when it declined,
// with Atom and strconv.ParseUint (the client's path before the patch,
// orig forces it), and describes everything observable.
func decodeAtomNumber(in string, bufSize int, oneByte bool, maxSize int64, orig bool) string {
	dec := testDecoder(in, ConnSideClient, bufSize, oneByte, maxSize)
	dec.r.Peek(1) // a response's first bytes are buffered when its number is read
	var out strings.Builder
	n, ok := uint32(0), false
	if !orig {
		before := dec.readBytes
		n, ok = dec.AtomNumber()
		if !ok && dec.readBytes != before {
			return "AtomNumber declined after reading"
		}
	}
	if ok {
		fmt.Fprintf(&out, "number %d", n)
	} else {
		var s string
		if dec.Atom(&s) {
			if v, err := strconv.ParseUint(s, 10, 32); err == nil && s[0] >= '0' && s[0] <= '9' {
				fmt.Fprintf(&out, "number %d", v)
			} else {
				fmt.Fprintf(&out, "atom %q", s)
			}
		} else {
			out.WriteString("no atom")
		}
	}
	fmt.Fprintf(&out, " crlf=%v n=%d", dec.crlf, dec.readBytes)
	if dec.Err() != nil {
		out.WriteString(" err=" + dec.Err().Error())
	}
	return out.String() + " rest=" + unreadRest(dec)
}

func checkAtomNumber(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	want := decodeAtomNumber(in, bufSize, oneByte, maxSize, true)
	got := decodeAtomNumber(in, bufSize, oneByte, maxSize, false)
	if got != want {
		t.Fatalf("%q bufio %d oneByte %v MaxSize %d:\n got  %s\n want %s", in, bufSize, oneByte, maxSize, got, want)
	}
}

func TestPatchResponseNumberMatchesAtom(t *testing.T) {
	inputs := []string{
		"31 FETCH (UID 7)\r\n", "50 EXISTS\r\n", "0 RECENT\r\n", "007 EXPUNGE\r\n", "123456789 FETCH", "1234567890 FETCH",
		"4294967295 EXISTS", "4294967296 EXISTS", "31abc FETCH", "31", "31\r\n", "x31 FETCH", "OK done\r\n", "", " 1",
	}
	for _, in := range inputs {
		for _, bs := range []int{16, 4096} {
			for _, ob := range []bool{false, true} {
				for ms := int64(0); ms < int64(len(in))+3; ms++ {
					checkAtomNumber(t, in, bs, ob, ms)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(14))
	const alphabet = "0123456789 \r\nAZ(*"
	for range 50000 {
		in := make([]byte, rng.Intn(16))
		for j := range in {
			if rng.Intn(3) > 0 {
				in[j] = '0' + byte(rng.Intn(10))
			} else {
				in[j] = alphabet[rng.Intn(len(alphabet))]
			}
		}
		checkAtomNumber(t, string(in), 16, rng.Intn(3) == 0, int64(rng.Intn(20)))
	}
}

func FuzzPatchResponseNumber(f *testing.F) {
	f.Add("31 FETCH (UID 7)\r\n", int64(0), false)
	f.Add("4294967296 EXISTS", int64(5), true)
	f.Fuzz(func(t *testing.T, in string, maxSize int64, oneByte bool) {
		checkAtomNumber(t, in, 16, oneByte, maxSize)
	})
}

func TestPatchResponseNumberAllocs(t *testing.T) {
	dec := testDecoder(strings.Repeat("31 FETCH\r\n", 200), ConnSideClient, 4096, false, 0)
	dec.r.Peek(1)
	allocs := testing.AllocsPerRun(100, func() {
		var s string
		if n, ok := dec.AtomNumber(); !ok || n != 31 || !dec.SP() || !dec.Atom(&s) || !dec.CRLF() {
			t.Fatal("31 FETCH not read")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per numbered response, want 0", allocs)
	}
}
