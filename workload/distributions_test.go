package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestWeightedPicksInProportion(t *testing.T) {
	var d Weighted[string]
	d.Add("a", 70)
	d.Add("never", 0)
	d.Add("b", 20)
	d.Add("c", 10)
	if d.Len() != 3 {
		t.Fatalf("Len %d, want 3 (zero weights left out)", d.Len())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 100_000
	got := map[string]int{}
	for range n {
		got[d.Pick(rng)]++
	}
	for item, want := range map[string]float64{"a": 0.7, "b": 0.2, "c": 0.1} {
		if share := float64(got[item]) / n; math.Abs(share-want) > 0.01 {
			t.Errorf("%s drawn %.3f of the time, want %.2f", item, share, want)
		}
	}
	if got["never"] != 0 {
		t.Errorf("a zero-weight item was drawn %d times", got["never"])
	}
}

func TestSessionMixEmpty(t *testing.T) {
	p := &Plan{Mix: []SessionPlan{{Type: "check"}, {Type: "read"}}}
	if _, err := p.SessionMix(); err == nil {
		t.Error("a mix with every weight 0 was accepted")
	}
}

// TestPlanSessionMix: the mix a run draws from is its plan's, by weight,
// in SessionKinds' order (the order the seed's draws depend on), without
// the types of weight 0.
func TestPlanSessionMix(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Target.Embedded = true
	cfg.Users.Password = "pw-of-the-test"
	cfg.Sessions.Folders.Weight = 0
	cfg.Sessions.Read.Weight = 3
	p, err := NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.SessionMix()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []SessionKind
	var total float64
	for _, k := range SessionKinds {
		if w := cfg.Sessions.Type(k).Weight; w > 0 {
			kinds = append(kinds, k)
			total += w
			if got := d.cum[len(kinds)-1]; got != total {
				t.Errorf("%s: cumulative weight %g, want %g", k, got, total)
			}
		}
	}
	if !slices.Equal(d.items, kinds) {
		t.Errorf("mix %v, want %v", d.items, kinds)
	}
}
