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
