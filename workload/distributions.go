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

// SessionMix is the session types of cfg by weight.
func SessionMix(cfg *Config) (*Weighted[SessionKind], error) {
	d := &Weighted[SessionKind]{}
	for _, k := range SessionKinds {
		d.Add(k, cfg.Sessions.Type(k).Weight)
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("every session type has weight 0")
	}
	return d, nil
}

// recipientPicker draws recipient lists: how many from the recipients
// distribution, each remote with RemoteShare probability.
type recipientPicker struct {
	counts       Weighted[RecipientShare]
	remoteShare  float64
	remoteDomain string
}

func newRecipientPicker(m MessagesConfig, remoteDomain string) (*recipientPicker, error) {
	p := &recipientPicker{remoteShare: m.RemoteShare, remoteDomain: remoteDomain}
	for _, r := range m.Recipients {
		p.counts.Add(r, r.Share)
	}
	if p.counts.Len() == 0 {
		return nil, fmt.Errorf("recipient distribution is empty")
	}
	return p, nil
}

func (p *recipientPicker) count(rng *rand.Rand) int {
	b := p.counts.Pick(rng)
	n := b.Min
	if b.Max > b.Min {
		n += rng.IntN(b.Max - b.Min + 1)
	}
	return max(n, 1)
}

// pick returns recipients for a message from sender: local users other than
// the sender where possible, and remote addresses in the remote domain.
func (p *recipientPicker) pick(rng *rand.Rand, users []User, sender User) []string {
	n := p.count(rng)
	to := make([]string, 0, n)
	for range n {
		if rng.Float64() < p.remoteShare {
			to = append(to, fmt.Sprintf("rcpt%d@%s", 1+rng.IntN(100000), p.remoteDomain))
			continue
		}
		u := users[rng.IntN(len(users))]
		if u.Address == sender.Address && len(users) > 1 {
			u = users[(rng.IntN(len(users)-1)+indexOf(users, sender)+1)%len(users)]
		}
		to = append(to, u.Address)
	}
	return dedupe(to)
}

// pickLocal returns only local recipients (inbound mail from outside).
func (p *recipientPicker) pickLocal(rng *rand.Rand, users []User) []string {
	n := min(p.count(rng), len(users))
	to := make([]string, 0, n)
	for range n {
		to = append(to, users[rng.IntN(len(users))].Address)
	}
	return dedupe(to)
}

func indexOf(users []User, u User) int {
	for i := range users {
		if users[i].Address == u.Address {
			return i
		}
	}
	return 0
}

func dedupe(s []string) []string {
	out := s[:0]
	seen := make(map[string]bool, len(s))
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
