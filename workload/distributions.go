package workload

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// sizePicker draws message sizes from the configured size distribution.
// It doesn't perform I/O and is safe for concurrent use (read-only).
type sizePicker struct {
	sizes []int
	cum   []float64 // cumulative share, ending at the total
}

func newSizePicker(shares []SizeShare) (*sizePicker, error) {
	p := &sizePicker{}
	total := 0.0
	for _, s := range shares {
		if s.Share <= 0 {
			continue
		}
		total += s.Share
		p.sizes = append(p.sizes, int(s.Size))
		p.cum = append(p.cum, total)
	}
	if len(p.sizes) == 0 {
		return nil, fmt.Errorf("message size distribution is empty")
	}
	return p, nil
}

// Buckets returns the distinct sizes, smallest first.
func (p *sizePicker) Buckets() []int {
	b := append([]int(nil), p.sizes...)
	sort.Ints(b)
	return b
}

func (p *sizePicker) pick(rng *rand.Rand) int {
	x := rng.Float64() * p.cum[len(p.cum)-1]
	i := sort.SearchFloat64s(p.cum, x)
	if i >= len(p.sizes) {
		i = len(p.sizes) - 1
	}
	return p.sizes[i]
}

// recipientPicker draws recipient lists: how many from the recipients
// distribution, each remote with RemoteShare probability.
type recipientPicker struct {
	buckets      []RecipientShare
	cum          []float64
	remoteShare  float64
	remoteDomain string
}

func newRecipientPicker(m MessagesConfig, remoteDomain string) (*recipientPicker, error) {
	p := &recipientPicker{remoteShare: m.RemoteShare, remoteDomain: remoteDomain}
	total := 0.0
	for _, r := range m.Recipients {
		if r.Share <= 0 {
			continue
		}
		total += r.Share
		p.buckets = append(p.buckets, r)
		p.cum = append(p.cum, total)
	}
	if len(p.buckets) == 0 {
		return nil, fmt.Errorf("recipient distribution is empty")
	}
	return p, nil
}

func (p *recipientPicker) count(rng *rand.Rand) int {
	x := rng.Float64() * p.cum[len(p.cum)-1]
	i := sort.SearchFloat64s(p.cum, x)
	if i >= len(p.buckets) {
		i = len(p.buckets) - 1
	}
	b := p.buckets[i]
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
