package workload

import (
	"math"
	"math/rand/v2"
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
	cfg := DefaultConfig()
	for _, k := range SessionKinds {
		st := cfg.Sessions.Type(k)
		st.Weight = 0
		switch k {
		case Check:
			cfg.Sessions.Check = st
		case Read:
			cfg.Sessions.Read = st
		case Cleanup:
			cfg.Sessions.Cleanup = st
		case Folders:
			cfg.Sessions.Folders = st
		case Send:
			cfg.Sessions.Send = st
		}
	}
	if _, err := SessionMix(cfg); err == nil {
		t.Error("a mix with every weight 0 was accepted")
	}
}
