package imapclient

// Tests of mailbench's caps-cache.patch (PATCHES.md): readCapabilities,
// which returns a set read before when the same bytes come again, must
// read what beta.8's readCapabilities (readCapabilitiesParsed, unchanged)
// reads, with the same decoder state and errors after it, whatever the
// process read before; and a list read again is not parsed again.

import (
	"bufio"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

func describeCaps(caps imap.CapSet, err error) string {
	var names []string
	for c := range caps {
		names = append(names, string(c))
	}
	slices.Sort(names)
	return fmt.Sprintf("%q err=%v", names, err)
}

// decodeCaps reads a capability list from in as the response code of a
// greeting or tagged OK does ("[CAPABILITY" read, then the list, then
// "]"), or as a CAPABILITY response (list, then CRLF), and describes
// everything observable.
func decodeCaps(in string, bufSize int, oneByte bool, maxSize int64, orig bool) string {
	// restOf reads lines; a response's first bytes have been read when
	// its list is.
	dec := testDecoder(in+"\r\n", bufSize, oneByte, true, maxSize)
	var (
		caps imap.CapSet
		err  error
	)
	if orig {
		caps, err = readCapabilitiesParsed(dec)
	} else {
		caps, err = readCapabilities(dec)
	}
	out := fmt.Sprintf("%s n=%d", describeCaps(caps, err), dec.Consumed())
	if dec.Err() != nil {
		out += " decErr=" + dec.Err().Error()
	}
	return out + " rest=" + restOf(dec)
}

func checkCaps(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	checkSameDecoding(t, decodeCaps, in, bufSize, oneByte, maxSize)
}

var capsInputs = []string{
	" IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ STARTTLS AUTH=PLAIN AUTH=LOGIN] Dovecot ready.\r\n",
	" IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT SORT=DISPLAY THREAD=REFERENCES MULTIAPPEND UNSELECT] Logged in\r\n",
	" IMAP4rev1 IDLE\r\n", " IMAP4rev1 IDLE \r\n", " IMAP4rev1  IDLE]", " IMAP4rev1 IDLE\n", "]", "\r\n", " ]", " IMAP4rev1 IDLE",
	" IMAP4rev1 IDLE(]", " IMAP4rev1 (IDLE)]", " imap4rev1 idle]", " IMAP4rev1 IDLE]x", " IMAP4rev1 IDLE XX]",
}

func TestPatchCapsCacheMatchesOriginal(t *testing.T) {
	for range 2 { // the second time, with every list seen
		for _, in := range capsInputs {
			for _, bs := range []int{16, 64, 4096} {
				for _, ob := range []bool{false, true} {
					for _, ms := range []int64{0, 5, 17, 40, 90, 200} {
						checkCaps(t, in, bs, ob, ms)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(23))
	atoms := []string{"IMAP4rev1", "IDLE", "ID", "LITERAL+", "AUTH=PLAIN", "X"}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for k := rng.Intn(4); k >= 0; k-- {
			b.WriteString([]string{" ", "  ", ""}[rng.Intn(3)])
			b.WriteString(atoms[rng.Intn(len(atoms))])
		}
		b.WriteString([]string{"]", "\r\n", "\n", " \r\n", "", "(", "]more"}[rng.Intn(7)])
		checkCaps(t, b.String(), []int{16, 64, 4096}[rng.Intn(3)], rng.Intn(3) == 0, int64(rng.Intn(60)))
	}
}

func FuzzPatchCapsCache(f *testing.F) {
	for _, in := range capsInputs {
		f.Add(in, int64(0))
	}
	f.Fuzz(func(t *testing.T, in string, maxSize int64) {
		checkCaps(t, in, 64, false, maxSize)
	})
}

// Dovecot's list after LOGIN, read again by a new connection, is the set
// read the first time and costs no allocation.
func TestPatchCapsCacheReuses(t *testing.T) {
	in := capsInputs[1]
	r := strings.NewReader("")
	br := bufio.NewReaderSize(r, 4096)
	dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
	read := func() imap.CapSet {
		r.Reset(in)
		br.Reset(r)
		br.Peek(1)
		caps, err := readCapabilities(dec)
		if err != nil {
			t.Fatal(err)
		}
		return caps
	}
	first := read()
	if !first.Has(imap.CapSort) || len(first) != 11 {
		t.Fatalf("caps %v", first)
	}
	if allocs := testing.AllocsPerRun(50, func() { read() }); allocs > 0 {
		t.Errorf("%.0f allocations for a list read again", allocs)
	}
}
