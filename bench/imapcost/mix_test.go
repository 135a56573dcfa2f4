package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMixRange checks the FETCH range of the mix: inside the mailbox, and
// as many messages as imaptest's min(n, 100) picks of 1..n name on
// average (n(1-(1-1/n)^min(n, 100)), about 63% of a mailbox of 50).
func TestMixRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []uint32{1, 2, 50, 100, 300} {
		var total float64
		const draws = 2000
		for range draws {
			from, to := mixRange(rng, n)
			if from < 1 || to > n || to < from {
				t.Fatalf("n=%d: range %d:%d outside 1:%d", n, from, to, n)
			}
			total += float64(to - from + 1)
		}
		picks := float64(min(n, 100))
		want := float64(n) * (1 - math.Pow(1-1/float64(n), picks))
		if got := total / draws; got < want*0.97 || got > want*1.03 {
			t.Errorf("n=%d: %.2f messages per FETCH on average, want about %.2f", n, got, want)
		}
	}
}

// TestMixItems checks the FETCH item lists of the mix: 1 to 4 items, each
// one of imaptest's fields or a HEADER.FIELDS section of 1 to 4 of its
// header names, about a quarter of them sections, and every length drawn.
func TestMixItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lengths := map[int]int{}
	var items, sections int
	for range 4000 {
		l := mixItems(rng)
		lengths[len(l)]++
		for _, it := range l {
			items++
			switch {
			case it.Name == "BODY.PEEK" && it.Section == "HEADER.FIELDS":
				sections++
				if len(it.Fields) < 1 || len(it.Fields) > 4 {
					t.Fatalf("%s: want 1 to 4 header fields", it)
				}
				for _, f := range it.Fields {
					if !slices.Contains(mixHeaders, f) {
						t.Fatalf("%s: %q is not one of imaptest's header fields", it, f)
					}
				}
			case slices.Contains(mixFields, it.Name):
			default:
				t.Fatalf("item %s is not one imaptest asks", it)
			}
		}
	}
	for n := 1; n <= 4; n++ {
		if lengths[n] < 800 || lengths[n] > 1200 {
			t.Errorf("%d lists of %d items in 4000, want about 1000", lengths[n], n)
		}
	}
	if len(lengths) != 4 {
		t.Errorf("list lengths %v, want 1 to 4 only", lengths)
	}
	if share := float64(sections) / float64(items); share < 0.22 || share > 0.28 {
		t.Errorf("%.3f of the items are header sections, want about 0.25", share)
	}
}

// TestMixRangeDoesNotAllocate: the draw runs inside the measured phase, so
// for the mailboxes measured it must not add allocations to what is
// counted as the client's cost.
func TestMixRangeDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	if allocs := testing.AllocsPerRun(100, func() { mixRange(rng, 50) }); allocs != 0 {
		t.Errorf("mixRange of a 50-message mailbox: %.0f allocations, want 0", allocs)
	}
}

// TestMixDelete checks the STORE \Deleted of the mix against imaptest's
// STATE_STORE_DEL: at the threshold a STORE of one message in half the
// sessions; over threshold+5, more messages at once; and a mailbox that
// gets one APPEND per session stays near the threshold, with a STORE in
// about the share of sessions imaptest's own Totals show (802 of 1,486,
// 54%, bench/imaptest-vs-mailbench, twenty-sixth round).
func TestMixDelete(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	stores := 0
	for range 4000 {
		from, to := mixDelete(rng, 50, 50)
		switch {
		case from == 0 && to == 0:
		case from >= 1 && to == from && to <= 50:
			stores++
		default:
			t.Fatalf("at the threshold: %d:%d, want one message or none", from, to)
		}
	}
	if stores < 1800 || stores > 2200 {
		t.Errorf("at the threshold: %d STOREs in 4000 sessions, want about 2000", stores)
	}
	var most uint32
	for range 1000 {
		from, to := mixDelete(rng, 60, 50)
		if from == 0 {
			continue
		}
		if from < 1 || to > 60 || to < from {
			t.Fatalf("over it: %d:%d outside 1:60", from, to)
		}
		most = max(most, to-from+1)
	}
	if most < 5 || most > 11 {
		t.Errorf("over threshold+5: at most %d messages at once, want up to 11 (a bound of 2+10)", most)
	}
	n, stores, lo, hi := uint32(50), 0, uint32(50), uint32(50)
	const sessions = 5000
	for range sessions {
		if from, to := mixDelete(rng, n, 50); from != 0 {
			stores++
			n -= to - from + 1
		}
		n++ // the session's APPEND
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo < 45 || hi > 60 {
		t.Errorf("the mailbox went from %d to %d messages, want it near 50 to 57", lo, hi)
	}
	if share := float64(stores) / sessions; share < 0.50 || share > 0.60 {
		t.Errorf("a STORE in %.3f of the sessions, want about imaptest's 0.54", share)
	}
}

func TestMixDeleteDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	if allocs := testing.AllocsPerRun(100, func() { mixDelete(rng, 60, 50) }); allocs != 0 {
		t.Errorf("mixDelete allocated %.0f times per draw, want 0", allocs)
	}
}

// TestMixAppend checks the APPEND of the mix against imaptest's draw: a
// flag list in half the APPENDs, each system flag in it half the time and
// each keyword a quarter of the time, never \Deleted; a date in half.
func TestMixAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 40000
	var lists, dates int
	count := map[string]int{}
	for range n {
		o := mixAppend(rng)
		if o.flags != nil {
			lists++
			for _, f := range o.flags {
				count[f]++
			}
		}
		if !o.date.IsZero() {
			dates++
		}
	}
	near := func(what string, got int, of int, want float64) {
		t.Helper()
		if f := float64(got) / float64(of); f < want-0.02 || f > want+0.02 {
			t.Errorf("%s: %.3f, want %.2f ± 0.02", what, f, want)
		}
	}
	near("APPENDs with a flag list", lists, n, 0.5)
	near("APPENDs with a date", dates, n, 0.5)
	for _, f := range mixSystemFlags {
		near(f+" in a flag list", count[f], lists, 0.5)
	}
	for _, k := range mixKeywords {
		near(k+" in a flag list", count[k], lists, 0.25)
	}
	if len(count) != len(mixSystemFlags)+len(mixKeywords) {
		t.Errorf("flags drawn: %v, want only %v and %v", count, mixSystemFlags, mixKeywords)
	}
	if count[`\Deleted`] != 0 || slices.Contains(mixSystemFlags, `\Deleted`) {
		t.Error(`the mix appends \Deleted, which imaptest never does`)
	}
}
