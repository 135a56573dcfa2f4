package imapwire

// Test for mailbench's known-atoms.patch: a well-known atom costs no
// allocation on a client's first sight of it, any other string is interned
// as before, and what intern returns always equals its input.

import (
	"bufio"
	"strings"
	"testing"
)

func TestPatchKnownAtoms(t *testing.T) {
	if len(knownAtoms) < 100 {
		t.Fatalf("%d known atoms", len(knownAtoms))
	}
	for atom, s := range knownAtoms {
		if s != atom || len(atom) > atomCacheMax {
			t.Errorf("known atom %q -> %q (longer than %d bytes is never looked up)", atom, s, atomCacheMax)
		}
	}
	// A new client's first LOGIN response: 40 capabilities from Dovecot.
	const caps = "* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT SORT=DISPLAY THREAD=REFERENCES " +
		"THREAD=REFS THREAD=ORDEREDSUBJECT MULTIAPPEND URL-PARTIAL CATENATE UNSELECT CHILDREN NAMESPACE UIDPLUS " +
		"LIST-EXTENDED I18NLEVEL=1 CONDSTORE QRESYNC ESEARCH ESORT SEARCHRES WITHIN CONTEXT=SEARCH LIST-STATUS " +
		"BINARY MOVE SNIPPET=FUZZY PREVIEW=FUZZY PREVIEW STATUS=SIZE SAVEDATE LITERAL+ NOTIFY SPECIAL-USE] Logged in\r\n"
	read := func(wire string, want func(string)) float64 {
		return testing.AllocsPerRun(20, func() {
			dec := NewDecoder(bufio.NewReaderSize(strings.NewReader(wire), 4096), ConnSideClient)
			dec.atoms = new(atomCache) // a new client's
			var a string
			if !dec.ExpectSpecial('*') || !dec.ExpectSP() || !dec.ExpectAtom(&a) || !dec.ExpectSP() || !dec.ExpectSpecial('[') {
				t.Fatal(dec.Err())
			}
			for dec.Atom(&a) {
				want(a)
				if !dec.SP() {
					break
				}
			}
		})
	}
	var got []string
	base := read("* OK [\r\n", func(string) {})
	allocs := read(caps, func(a string) { got = append(got, a) })
	if allocs-base > 1 { // got's growth: at most one per run on average
		t.Errorf("%.0f allocations to read 40 known capabilities on a new client (%.0f for none)", allocs, base)
	}
	if want := strings.Fields(caps[len("* OK ["):strings.IndexByte(caps, ']')]); strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
		t.Errorf("read %q, want %q", got[:len(want)], want)
	}
	// Unknown atoms are still interned, each an allocation the first time.
	unknown := "* OK [X-ONE X-TWO X-THREE X-FOUR] x\r\n"
	if allocs := read(unknown, func(string) {}); allocs-base < 4 {
		t.Errorf("%.0f allocations for four unknown atoms: the table answers what it does not hold", allocs-base)
	}
}

func TestPatchKnownAtomsIntern(t *testing.T) {
	var c atomCache
	for _, s := range []string{"FETCH", "FETCHX", "Fetch", "\\Seen", "\\seen", "X-Mailbench-Id", "From", "from", "a", strings.Repeat("y", 40)} {
		for range 2 {
			if got := c.intern([]byte(s)); got != s {
				t.Fatalf("intern(%q) = %q", s, got)
			}
		}
	}
}
