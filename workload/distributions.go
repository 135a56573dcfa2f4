package workload

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// Weighted draws items in proportion to their weights. It doesn't perform
// I/O and, once built, is safe for concurrent use (read-only); the caller
// supplies the random source.
type Weighted[T any] struct {
	items []T
	cum   []float64 // cumulative weights, ending at the total
}

// Add appends item with weight w; items with w <= 0 are never drawn and
// are left out.
func (d *Weighted[T]) Add(item T, w float64) {
	if w <= 0 {
		return
	}
	total := 0.0
	if n := len(d.cum); n > 0 {
		total = d.cum[n-1]
	}
	d.items = append(d.items, item)
	d.cum = append(d.cum, total+w)
}

// Len is the number of items that can be drawn.
func (d *Weighted[T]) Len() int { return len(d.items) }

// Pick draws one item. It panics when nothing was added with a weight > 0.
func (d *Weighted[T]) Pick(rng *rand.Rand) T {
	x := rng.Float64() * d.cum[len(d.cum)-1]
	i := sort.Search(len(d.cum), func(i int) bool { return d.cum[i] > x })
	return d.items[min(i, len(d.items)-1)]
}

// SizeDistribution is the message-size distribution of shares.
func SizeDistribution(shares []SizeShare) (*Weighted[int], error) {
	d := &Weighted[int]{}
	for _, s := range shares {
		d.Add(int(s.Size), s.Share)
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("message size distribution is empty")
	}
	return d, nil
}

// SessionMix is the plan's session types by weight, in the plan's order
// (that of SessionKinds): what a session arrival draws its type from. It
// doesn't perform I/O.
func (p *Plan) SessionMix() (*Weighted[SessionKind], error) {
	d := &Weighted[SessionKind]{}
	for _, sp := range p.Mix {
		d.Add(SessionKind(sp.Type), sp.Weight)
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("every session type has weight 0")
	}
	return d, nil
}
