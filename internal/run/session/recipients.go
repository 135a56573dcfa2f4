package session

import (
	"fmt"
	"math/rand/v2"

	"github.com/mailbench/mailbench/workload"
)

// recipientPicker draws recipient lists: how many from the recipients
// distribution, each remote with RemoteShare probability.
type recipientPicker struct {
	counts       workload.Weighted[workload.RecipientShare]
	remoteShare  float64
	remoteDomain string
}

func newRecipientPicker(m workload.MessagesConfig, remoteDomain string) (*recipientPicker, error) {
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
func (p *recipientPicker) pick(rng *rand.Rand, users []workload.User, sender workload.User) []string {
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
func (p *recipientPicker) pickLocal(rng *rand.Rand, users []workload.User) []string {
	n := min(p.count(rng), len(users))
	to := make([]string, 0, n)
	for range n {
		to = append(to, users[rng.IntN(len(users))].Address)
	}
	return dedupe(to)
}

func indexOf(users []workload.User, u workload.User) int {
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
