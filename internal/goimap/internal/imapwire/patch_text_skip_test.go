package imapwire

// Tests of mailbench's text-skip.patch (internal/goimap/PATCHES.md):
// SkipText and ExpectSkipText must report and leave the decoder exactly as
// Text and ExpectText do (runs_test checks Text against beta.8's), only
// without the text.

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// decodeTexts reads in with ExpectText (skip false) or ExpectSkipText
// (skip true), then reads a CRLF, and returns everything observable but
// the text: the results, readBytes, crlf, the error and the unread rest.
func decodeTexts(in string, bufSize int, oneByte bool, maxSize int64, skip bool) string {
	dec := testDecoder(in, ConnSideClient, bufSize, oneByte, maxSize)
	var ok bool
	if skip {
		ok = dec.ExpectSkipText()
	} else {
		var s string
		ok = dec.ExpectText(&s)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%v crlf=%v n=%d;", ok, dec.crlf, dec.readBytes)
	ok = dec.CRLF()
	fmt.Fprintf(&out, "%v crlf=%v n=%d;", ok, dec.crlf, dec.readBytes)
	if dec.Err() != nil {
		out.WriteString("err=" + dec.Err().Error())
	}
	out.WriteString(" rest=" + unreadRest(dec))
	return out.String()
}

func checkTextSkip(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	want := decodeTexts(in, bufSize, oneByte, maxSize, false)
	got := decodeTexts(in, bufSize, oneByte, maxSize, true)
	if got != want {
		t.Fatalf("%q bufio %d oneByte %v MaxSize %d:\n got  %s\n want %s", in, bufSize, oneByte, maxSize, got, want)
	}
}

func TestPatchTextSkipMatchesText(t *testing.T) {
	inputs := []string{
		"", "\r\n", "\n", "x", "x\r\n", "Fetch completed (0.001 + 0.000 secs).\r\n* 2 EXISTS\r\n",
		"Logged in\n", "\x00\xff \r\n", "[not a code] text\r", strings.Repeat("t", 40) + "\r\nrest",
	}
	for _, in := range inputs {
		for _, bs := range []int{16, 4096} {
			for _, ob := range []bool{false, true} {
				for ms := int64(0); ms < 48; ms++ {
					checkTextSkip(t, in, bs, ob, ms)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(12))
	const alphabet = " ()\r\n*AZ9\\\x00"
	for i := 0; i < 50000; i++ {
		in := make([]byte, rng.Intn(40))
		for j := range in {
			in[j] = alphabet[rng.Intn(len(alphabet))]
		}
		checkTextSkip(t, string(in), 16, rng.Intn(3) == 0, int64(rng.Intn(44)))
	}
}

func TestPatchTextSkipAllocs(t *testing.T) {
	in := "Fetch completed (0.001 + 0.000 secs).\r\n"
	dec := testDecoder(strings.Repeat(in, 200), ConnSideClient, 4096, false, 0)
	allocs := testing.AllocsPerRun(100, func() {
		if !dec.ExpectSkipText() || !dec.CRLF() {
			t.Fatal(dec.Err())
		}
	})
	if allocs != 0 {
		t.Errorf("ExpectSkipText: %v allocations per text, want 0", allocs)
	}
}

func FuzzPatchTextSkip(f *testing.F) {
	f.Add("Fetch completed.\r\n", int64(0), false)
	f.Add("\r\n", int64(1), true)
	f.Fuzz(func(t *testing.T, in string, maxSize int64, oneByte bool) {
		checkTextSkip(t, in, 16, oneByte, maxSize)
	})
}
