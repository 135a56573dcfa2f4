package session

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/workload"
)

func testUsers(n int) []workload.User {
	var us []workload.User
	for i := range n {
		us = append(us, workload.User{Login: fmt.Sprintf("u%d", i), Address: fmt.Sprintf("u%d@local.test", i)})
	}
	return us
}

// TestRecipientPicker: the counts follow the buckets, the remote share is
// honoured, a sender never mails itself while there is anyone else, a list
// holds no address twice, and the same seed gives the same lists.
func TestRecipientPicker(t *testing.T) {
	m := workload.MessagesConfig{
		Recipients:  []workload.RecipientShare{{Min: 1, Max: 1, Share: 80}, {Min: 2, Max: 4, Share: 20}},
		RemoteShare: 0.25,
	}
	p, err := newRecipientPicker(m, "remote.test")
	if err != nil {
		t.Fatal(err)
	}
	users := testUsers(50)
	draw := func(seed uint64) (lists [][]string) {
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range 4000 {
			lists = append(lists, p.pick(rng, users, users[i%len(users)]))
		}
		return lists
	}
	lists := draw(7)
	var single, remote, all int
	for i, to := range lists {
		sender := users[i%len(users)].Address
		seen := map[string]bool{}
		if len(to) == 0 || len(to) > 4 {
			t.Fatalf("list %d has %d recipients, want 1..4", i, len(to))
		}
		if len(to) == 1 {
			single++
		}
		for _, a := range to {
			if a == sender {
				t.Errorf("list %d: the sender %s mails itself", i, sender)
			}
			if seen[a] {
				t.Errorf("list %d: %s twice", i, a)
			}
			seen[a] = true
			all++
			if strings.HasSuffix(a, "@remote.test") {
				remote++
			}
		}
	}
	// Drawn single-recipient lists: 80% of the buckets (and a few deduped
	// two-recipient ones); remote addresses: 25% of all drawn.
	if f := float64(single) / float64(len(lists)); f < 0.77 || f > 0.84 {
		t.Errorf("%.3f of the lists have one recipient, want about 0.80", f)
	}
	if f := float64(remote) / float64(all); f < 0.22 || f > 0.28 {
		t.Errorf("%.3f of the recipients are remote, want about 0.25", f)
	}
	again := draw(7)
	for i := range lists {
		if strings.Join(lists[i], ",") != strings.Join(again[i], ",") {
			t.Fatalf("list %d differs for the same seed: %v, %v", i, lists[i], again[i])
		}
	}

	// One user only: it is its own only local recipient.
	one := testUsers(1)
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		for _, a := range p.pickLocal(rng, one) {
			if a != one[0].Address {
				t.Fatalf("pickLocal of one user gave %s", a)
			}
		}
	}
	if _, err := newRecipientPicker(workload.MessagesConfig{}, "remote.test"); err == nil {
		t.Error("an empty distribution was accepted")
	}
}
