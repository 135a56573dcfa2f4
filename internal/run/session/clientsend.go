package session

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// clientSend submits one message from u, a user of the population, as
// their mail client does: a submission logged in as u to recipients drawn
// like a send session's, timed as one Client send from the dial to the
// 250 after DATA (its SMTP Connect and SMTP Data are not SPEC's rows).
func (e *sessionEnv) clientSend(ctx context.Context, u workload.User, rng *rand.Rand, sizes *workload.Weighted[int]) error {
	start := time.Now()
	to := e.rcpts.pick(rng, e.allUsers, u)
	env822, size, variant := e.newMessage(u.Address, to, rng, sizes)
	sc := e.smtp
	sc.Username, sc.Password = u.Login, u.Password
	sc.Observer = measure.Discard
	err := e.submit(ctx, sc, env822, size, variant)
	e.obs.Observe(measure.Observation{Function: measure.ClientSend, Start: start, Duration: time.Since(start), Class: measure.Classify(err), Err: err})
	return err
}

// submit connects, sends and quits; the ledger learns what was accepted.
func (e *sessionEnv) submit(ctx context.Context, sc smtpclient.Config, env822 message.Envelope, size int, variant uint64) error {
	c, err := smtpclient.Connect(ctx, sc)
	if err != nil {
		return err
	}
	defer c.Close()
	env822.Sent = time.Now()
	msg := e.gen.Source(env822, size, variant) // rendered outside Send's timed span, the body not copied
	res, err := c.Send(ctx, env822.From, env822.To, msg)
	if err != nil {
		if e.onRejected != nil && measure.Classify(err) == measure.Protocol {
			e.onRejected()
		}
		return err
	}
	e.accepted(env822.ID, time.Now(), msg.Size(), res.Accepted)
	_ = c.Quit(ctx)
	return nil
}
