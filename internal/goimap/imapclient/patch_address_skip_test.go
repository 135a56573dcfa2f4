package imapclient

// Tests of mailbench's address-skip.patch (PATCHES.md): skipAddressList,
// which skips an address list in its usual form from the buffered bytes
// at once, must leave the decoder exactly as envelope-addresses.patch's
// reader (skipAddressListSlow, unchanged) does: the same error, the same
// bytes consumed, the same rest, through any buffer, read size and
// MaxSize.

import (
	"bufio"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

// decodeAddressList skips an address list from in (followed by " rest"
// and a CRLF, as an ENVELOPE's next field would be) and describes
// everything observable.
func decodeAddressList(in string, bufSize int, oneByte bool, maxSize int64, slow bool) string {
	// The list's first bytes have been read when it is skipped.
	dec := testDecoder(in+" NIL\r\n", bufSize, oneByte, true, maxSize)
	var err error
	if slow {
		err = skipAddressListSlow(dec)
	} else {
		err = skipAddressList(dec)
	}
	out := fmt.Sprintf("err=%v n=%d", err, dec.Consumed())
	if dec.Err() != nil {
		out += " decErr=" + dec.Err().Error()
	}
	return out + " rest=" + restOf(dec)
}

func checkAddressList(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	checkSameDecoding(t, decodeAddressList, in, bufSize, oneByte, maxSize)
}

var addressListInputs = []string{
	`(("Mailbench User" NIL "user1" "mailbench.test"))`,
	`(("a" NIL "x" "y")("b" NIL "z" "w"))`,
	`(("a" NIL "x" "y") ("b" NIL "z" "w"))`,
	`((NIL NIL "user" "example.org"))`, `NIL`, `()`, `(())`, `((NIL NIL NIL NIL))`,
	`(("a\"b" NIL "x" "y"))`, `(("a\\b" NIL "x" "y"))`, `(({3}` + "\r\nabc" + ` NIL "x" "y"))`,
	`(("a" NIL "x" "y")`, `(("a" NIL "x"))`, `(("a" NIL "x" "y" "z"))`, `(("a"  NIL "x" "y"))`,
	`(("a" nil "x" "y"))`, `(("a" NILX "x" "y"))`, `(("a" NIL "x" "y")  ("b" NIL "z" "w"))`,
	`(("line` + "\r\n" + `break" NIL "x" "y"))`, `(("ü" NIL "x" "y"))`, `(("a" NIL "x" "y")(`, `(`, ``,
	`(("a" NIL "x" "y"))x`, `(("a" NIL "x" "y")))`, "((\"a\" NIL \"x\" \"y\")\t(\"b\" NIL \"z\" \"w\"))",
}

func TestPatchAddressSkipMatchesSlow(t *testing.T) {
	for _, in := range addressListInputs {
		for _, bs := range []int{16, 64, 4096} {
			for _, ob := range []bool{false, true} {
				for ms := int64(0); ms < int64(len(in))+10; ms++ {
					checkAddressList(t, in, bs, ob, ms)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(13))
	pieces := []string{`(`, `)`, ` `, `NIL`, `"a"`, `"Mailbench User"`, `"x\"y"`, `""`, `{2}` + "\r\nab", `"`, `nil`, "\r\n", `\`, "\t"}
	for range 60000 {
		var b strings.Builder
		b.WriteString("((")
		for range rng.Intn(14) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		in := b.String()
		if rng.Intn(2) == 0 { // mostly well-formed, so that the fast path runs
			in = `(("a" NIL "x" "y")` + strings.Repeat(` ("b b" NIL "z" "w")`, rng.Intn(3)) + in[2:] + `)`
		}
		checkAddressList(t, in, []int{16, 64, 4096}[rng.Intn(3)], rng.Intn(4) == 0, int64(rng.Intn(len(in)+8)))
	}
}

func FuzzPatchAddressSkip(f *testing.F) {
	for _, in := range addressListInputs {
		f.Add(in, int64(0), false)
	}
	f.Fuzz(func(t *testing.T, in string, maxSize int64, oneByte bool) {
		checkAddressList(t, in, 64, oneByte, maxSize)
	})
}

// The fast path is taken for the lists Dovecot sends (one address, or
// several adjacent), and not for the ones it leaves to the slow path.
func TestPatchAddressSkipTaken(t *testing.T) {
	for in, want := range map[string]bool{
		`(("Mailbench User" NIL "user1" "mailbench.test"))`: true,
		`(("a" NIL "x" "y")("b" NIL "z" "w"))`:              true,
		`((NIL NIL "user" "example.org"))`:                  true,
		`NIL`:                                               false,
		`(("a\"b" NIL "x" "y"))`:                            false,
		`(({3}` + "\r\nabc" + ` NIL "x" "y"))`:              false,
	} {
		br := bufio.NewReader(strings.NewReader(in + " NIL\r\n"))
		br.Peek(1)
		dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
		if got := dec.SkipAddressList(); got != want {
			t.Errorf("%q: SkipAddressList = %v, want %v", in, got, want)
		}
	}
}
