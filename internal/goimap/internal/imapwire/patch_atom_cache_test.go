package imapwire

// Test for mailbench's atom-cache.patch. The differential tests of
// runs.patch and of the Quoted change (TestPatchRunsMatchOriginal,
// TestPatchQuotedMatchesOriginal, their fuzz targets) decode with a
// client's decoder, so they compare the cached Func and Quoted with
// beta.8's. Here: what the cache is for (a repeated short atom or quoted
// string costs no allocation on a client's decoder, a server's decoder is
// unchanged) and its bounds.

import (
	"bufio"
	"strings"
	"testing"
)

func TestPatchAtomCache(t *testing.T) {
	const item = `* FETCH "X-Mailbench-Id" X` // runs are cached when buffered: after "* "
	for _, tc := range []struct {
		side       ConnSide
		wantAllocs bool
	}{{ConnSideClient, false}, {ConnSideServer, true}} {
		r := strings.NewReader("")
		br := bufio.NewReaderSize(r, 4096)
		dec := NewDecoder(br, tc.side)
		read := func() {
			r.Reset(item)
			br.Reset(r)
			var a, q string
			if !dec.ExpectSpecial('*') || !dec.ExpectSP() || !dec.ExpectAtom(&a) || !dec.ExpectSP() || !dec.ExpectAString(&q) {
				t.Fatal(dec.Err())
			}
			if a != "FETCH" || q != "X-Mailbench-Id" {
				t.Fatalf("read %q %q", a, q)
			}
		}
		read()
		allocs := testing.AllocsPerRun(100, read)
		if (allocs > 0) != tc.wantAllocs {
			t.Errorf("side %v: %.0f allocations to read an atom and a quoted string again", tc.side, allocs)
		}
	}

	// Long strings are not kept, and the cache stays at its size.
	var c atomCache
	long := []byte(strings.Repeat("x", atomCacheMax+1))
	if s := c.intern(long); s != string(long) {
		t.Fatalf("intern(long) = %q", s)
	}
	for _, s := range c {
		if s != "" {
			t.Fatalf("a string longer than %d bytes was kept: %q", atomCacheMax, s)
		}
	}
	for i := range 1000 {
		c.intern([]byte(strings.Repeat("a", 1+i%atomCacheMax) + "b"))
	}
	for _, s := range c {
		if len(s) > atomCacheMax {
			t.Fatalf("a string of %d bytes in the cache", len(s))
		}
	}
}

// TestPatchAtomSlots: the atoms and quoted strings every message of a
// FETCH response repeats each keep a slot of their own, so that the
// second message finds all of them (atom-slots.patch). Dovecot echoes
// header field names in capitals, the demo target as they were asked.
func TestPatchAtomSlots(t *testing.T) {
	items := []string{"FETCH", "UID", "FLAGS", `\Seen`, "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODY",
		"HEADER.FIELDS", "OK", "NIL"}
	for _, names := range [][]string{
		{"FROM", "TO", "SUBJECT", "DATE", "MESSAGE-ID", "X-MAILBENCH-ID", "X-MAILBENCH-SENT"},
		{"From", "To", "Subject", "Date", "Message-Id", "X-Mailbench-Id", "X-Mailbench-Sent"},
	} {
		slots := map[uint]string{}
		for _, a := range append(items, names...) {
			if other, ok := slots[atomSlot([]byte(a))]; ok {
				t.Errorf("%q and %q share a slot", a, other)
			}
			slots[atomSlot([]byte(a))] = a
		}
	}
}
