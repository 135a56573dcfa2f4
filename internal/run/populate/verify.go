package populate

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/workload"
)

// VerifySummary is what Verify checked.
type VerifySummary struct {
	Users, Mailboxes int
	Messages         int64 // messages counted
	Duration         time.Duration
}

// Verify checks that every user's mailboxes hold exactly what Init puts
// there: each mailbox of the plan exists and its message count (STATUS) is
// the plan's. It does not compare contents. The first mismatch is the
// error, naming the user and the mailbox. Workers, deadlines and errors as
// for Init.
func Verify(ctx context.Context, cfg *workload.Config, opts Options) (VerifySummary, error) {
	start := time.Now()
	j, err := newJob(cfg, opts)
	if err != nil {
		return VerifySummary{}, err
	}
	var users, boxes, messages atomic.Int64
	pr := newProgress(opts.Progress, "verify", "users", int64(len(j.users)), j.every)
	err = j.forEachUser(ctx, func(ctx context.Context, c *imapclient.Client, u workload.User) error {
		for _, p := range mailboxes.For(cfg, u.Login) {
			n, err := c.Status(ctx, p.Mailbox)
			if err != nil {
				return fmt.Errorf("%s: status: %w", p.Mailbox, err)
			}
			if int(n) != p.Messages {
				return fmt.Errorf("%s holds %d messages, the population has %d (run mailbench clean and init)", p.Mailbox, n, p.Messages)
			}
			boxes.Add(1)
			messages.Add(int64(n))
		}
		users.Add(1)
		pr.Add(1)
		return nil
	})
	pr.Finish(err == nil)
	return VerifySummary{Users: int(users.Load()), Mailboxes: int(boxes.Load()), Messages: messages.Load(), Duration: time.Since(start)}, err
}
