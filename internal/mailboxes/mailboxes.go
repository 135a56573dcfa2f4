// Package mailboxes says what every user's mailboxes hold before a run:
// how many messages each mailbox gets and the messages themselves, the same
// for the same seed whatever the order users are populated in. The embedded
// target and `mailbench init` (package populate) both fill mailboxes from it.
package mailboxes

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/workload"
)

// Plan is what one user's mailbox holds once populated.
type Plan struct {
	Mailbox  string
	Messages int
}

// For returns the plan of one user's mailboxes: the same for the same
// seed and user, whatever the order users are populated in.
func For(cfg *workload.Config, login string) []Plan {
	rng := userRand(cfg.Seed, login, "mailboxes")
	plan := []Plan{{"INBOX", cfg.Mailboxes.InboxMessages}}
	lo, hi := cfg.Mailboxes.FolderMessagesMin, cfg.Mailboxes.FolderMessagesMax
	for _, mb := range append(cfg.Mailboxes.Standard(), cfg.Mailboxes.Folders...) {
		n := lo
		if hi > lo {
			n += rng.IntN(hi - lo + 1)
		}
		plan = append(plan, Plan{mb, n})
	}
	return plan
}

func userRand(seed int64, login, purpose string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(login))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// Messages calls emit for each message of mailbox mb of user u, in
// order, reproducibly from the seed. Dates go back from now, oldest first.
func Messages(cfg *workload.Config, gen *message.Generator, login, address, mb string, n int, emit func(msg []byte, t time.Time) error) error {
	rng := userRand(cfg.Seed, login, "messages/"+mb)
	sizes, err := workload.SizeDistribution(cfg.Messages.Sizes)
	if err != nil {
		return err
	}
	now := time.Now().Truncate(time.Second)
	for i := range n {
		size := sizes.Pick(rng)
		from := fmt.Sprintf("sender%d@%s", 1+rng.IntN(1000), cfg.Users.RemoteDomain)
		t := now.Add(-time.Duration(n-i) * time.Hour)
		env := message.Envelope{
			ID: fmt.Sprintf("init-%s-%s-%d", login, mb, i+1), From: from, To: []string{address},
			Subject: fmt.Sprintf("%s message %d", mb, i+1), Sent: t,
		}
		if err := emit(gen.Message(env, size, rng.Uint64()), t); err != nil {
			return err
		}
	}
	return nil
}

// Func is Messages in the form the embedded target populates with: it
// fills mailbox mb of user u as Mailboxes plans it.
func Func(cfg *workload.Config, gen *message.Generator) func(workload.User, string, func([]byte, time.Time) error) error {
	return func(u workload.User, mb string, add func([]byte, time.Time) error) error {
		for _, p := range For(cfg, u.Login) {
			if p.Mailbox == mb {
				return Messages(cfg, gen, u.Login, u.Address, mb, p.Messages, add)
			}
		}
		return nil
	}
}
