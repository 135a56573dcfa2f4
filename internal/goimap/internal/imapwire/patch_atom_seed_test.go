package imapwire

// Test for mailbench's atom-seed.patch: every known atom is still found
// on a client's first sight of it (in its slot's seed or, past
// knownFilter, in knownAtoms), the atoms of nearly every response are
// their slots' seeds, and runs that differ in their last byte only no
// longer share a slot.

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

func TestPatchAtomSeed(t *testing.T) {
	// No known atom is lost to the filter: a new cache hands out
	// knownAtoms' own string, so the first sight allocates nothing.
	for atom, known := range knownAtoms {
		i := atomSlot([]byte(atom))
		f := knownFilterBit([]byte(atom))
		if seedAtoms[i] != atom && knownFilter[f/64]&(1<<(f%64)) == 0 {
			t.Errorf("known atom %q is neither slot %d's seed (%q) nor in the filter", atom, i, seedAtoms[i])
		}
		var c atomCache
		if got := c.intern([]byte(atom)); unsafe.StringData(got) != unsafe.StringData(known) {
			t.Errorf("intern(%q) on a new cache is not the known string", atom)
		}
	}
	for i, s := range seedAtoms {
		if s != "" && (knownAtoms[s] != s || atomSlot([]byte(s)) != uint(i)) {
			t.Errorf("slot %d's seed %q is not a known atom of that slot", i, s)
		}
	}

	// The hottest list's atoms are each their slot's seed: no map lookup
	// on a session's first FETCH, OK or \Seen.
	for _, atom := range strings.Fields(knownAtomLists[len(knownAtomLists)-1]) {
		if i := atomSlot([]byte(atom)); seedAtoms[i] != atom {
			t.Errorf("%q is not slot %d's seed (%q has it)", atom, i, seedAtoms[i])
		}
	}

	// The filter lets few unknown runs through to the map.
	passed := 0
	const runs = 10000
	for n := range runs {
		run := []byte(fmt.Sprintf("x%d-%c", n, 'a'+n%26))
		if f := knownFilterBit(run); knownFilter[f/64]&(1<<(f%64)) != 0 {
			passed++
		}
	}
	if passed > runs/8 {
		t.Errorf("%d of %d unknown runs pass the filter", passed, runs)
	}

	// Runs that differ only in their last byte: tags, keywords, numbers.
	for _, family := range [][]string{
		strings.Fields("T1 T2 T3 T4 T5 T6 T7 T8 T9"),
		strings.Fields("$Label1 $Label2 $Label3 $Label4 $Label5"),
		strings.Fields("41 42 43 44 45 46 47 48 49"),
	} {
		slots := map[uint]string{}
		for _, a := range family {
			if other, ok := slots[atomSlot([]byte(a))]; ok {
				t.Errorf("%q and %q share a slot", a, other)
			}
			slots[atomSlot([]byte(a))] = a
		}
	}

	// What intern returns always equals its input, seeded or not.
	var c atomCache
	for _, s := range []string{"FETCH", "Fetch", "Seen", "seen", "T1", "T2", "X-MAILBENCH-ID", "$Label1", "", "é"} {
		if s == "" {
			continue
		}
		for range 3 {
			if got := c.intern([]byte(s)); got != s {
				t.Fatalf("intern(%q) = %q", s, got)
			}
		}
	}
}

// FuzzPatchAtomSeed: intern returns its input for any run, whatever the
// cache held before.
func FuzzPatchAtomSeed(f *testing.F) {
	for _, s := range []string{"FETCH", "Seen", "T1", "$Label1", "39", "HEADER.FIELDS"} {
		f.Add([]byte(s), []byte("OK"))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var c atomCache
		for _, run := range [][]byte{a, b, a, b} {
			if len(run) == 0 {
				continue
			}
			if got := c.intern(run); got != string(run) {
				t.Fatalf("intern(%q) = %q", run, got)
			}
		}
	})
}
