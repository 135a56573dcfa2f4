package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/message"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// sessionEnv is what every session needs; shared, read-only after setup
// except for the atomic message sequence.
type sessionEnv struct {
	cfg        *workload.Config
	users      []workload.User
	imap       imapclient.Config
	smtp       smtpclient.Config
	inboundTo  smtpclient.Config // where remote senders deliver
	gen        *message.Generator
	runID      uint32
	msgSeq     atomic.Uint64
	sizes      *workload.Weighted[int]
	rcpts      *recipientPicker
	folders    []string // folders for SELECT_FOLDER
	onSent     func(measure.Submission)
	onSeen     func(user string, infos []imapclient.MessageInfo, at time.Time)
	onBodyRead func(user string, b imapclient.BodyInfo) error
	onRejected func()
	obs        measure.Observer
}

// sessionRand returns the reproducible random source of arrival i.
func sessionRand(seed int64, stream uint64, i int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x9e3779b97f4a7c15*stream, uint64(i)))
}

// think sleeps an exponential think time; false when ctx ended first.
func (e *sessionEnv) think(ctx context.Context, rng *rand.Rand) bool {
	mean := e.cfg.Load.ThinkTime.Duration
	if mean <= 0 {
		return ctx.Err() == nil
	}
	d := time.Duration(rng.ExpFloat64() * float64(mean))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// run executes one session of kind k for user u. It returns the first error
// that ended the session early (already recorded as an observation by the
// client that met it).
func (e *sessionEnv) run(ctx context.Context, k workload.SessionKind, u workload.User, rng *rand.Rand) error {
	sc := e.cfg.Sessions
	switch k {
	case workload.Check:
		return e.imapSession(ctx, u, rng, func(c *imapclient.Client) error {
			var mb imapclient.Mailbox
			return e.steps(ctx, rng,
				func() (err error) { mb, err = c.SelectInbox(ctx); return err },
				func() error { return e.fetchNewest(ctx, c, mb, u, sc.Check.FetchCount) },
			)
		})
	case workload.Read:
		return e.imapSession(ctx, u, rng, func(c *imapclient.Client) error {
			var mb imapclient.Mailbox
			steps := []func() error{
				func() (err error) { mb, err = c.SelectInbox(ctx); return nonEmpty(mb, err) },
				func() error {
					// The newest fetch_count messages by UID.
					from := uint32(1)
					if n := uint32(sc.Read.FetchCount); mb.UIDNext > n {
						from = mb.UIDNext - n
					}
					infos, err := c.UIDFetchRange(ctx, from, mb.UIDNext-1)
					if err == nil {
						e.noteSeen(u, infos)
					}
					return err
				},
			}
			bodies := sc.Read.BodiesMin
			if sc.Read.BodiesMax > bodies {
				bodies += rng.IntN(sc.Read.BodiesMax - bodies + 1)
			}
			for range bodies {
				steps = append(steps, func() error { return e.readBody(ctx, c, u, 1+uint32(rng.IntN(int(mb.Messages)))) })
			}
			return e.steps(ctx, rng, steps...)
		})
	case workload.Cleanup:
		return e.imapSession(ctx, u, rng, func(c *imapclient.Client) error {
			var mb imapclient.Mailbox
			return e.steps(ctx, rng,
				func() (err error) { mb, err = c.SelectInbox(ctx); return nonEmpty(mb, err) },
				// The oldest messages go: a mailbox cleaned from the bottom
				// keeps the newest mail for check and read sessions.
				func() error { return c.Store(ctx, 1) },
				func() error {
					// The UID of the second oldest message is not known
					// without an extra FETCH; UID STORE on a UID below
					// UIDNEXT is what a client that cached the mailbox would
					// send. A UID that no longer exists is a valid command
					// with no effect.
					uid := uint32(1)
					if mb.UIDNext > mb.Messages {
						uid = mb.UIDNext - mb.Messages + 1
					}
					return c.UIDStore(ctx, uid)
				},
				func() error { return c.Expunge(ctx) },
			)
		})
	case workload.Folders:
		return e.imapSession(ctx, u, rng, func(c *imapclient.Client) error {
			var mb imapclient.Mailbox
			return e.steps(ctx, rng,
				func() error { _, err := c.List(ctx); return err },
				func() error { _, err := c.Lsub(ctx); return err },
				func() (err error) {
					mb, err = c.SelectFolder(ctx, e.folders[rng.IntN(len(e.folders))])
					return err
				},
				func() error { return e.fetchNewest(ctx, c, mb, u, sc.Folders.FetchCount) },
			)
		})
	case workload.Send:
		return e.sendSession(ctx, u, rng)
	case workload.Inbound:
		return e.inbound(ctx, rng)
	}
	return fmt.Errorf("unknown session kind %q", k)
}

// errNothingToDo ends a session script early without an error: its mailbox
// is empty, so the remaining steps have nothing to act on.
var errNothingToDo = errors.New("nothing to do")

// nonEmpty passes err on, or errNothingToDo for an empty mailbox.
func nonEmpty(mb imapclient.Mailbox, err error) error {
	if err == nil && mb.Messages == 0 {
		return errNothingToDo
	}
	return err
}

// steps runs a session script: each step in order, with a think time
// between two steps, until one fails or ctx ends.
func (e *sessionEnv) steps(ctx context.Context, rng *rand.Rand, steps ...func() error) error {
	for i, step := range steps {
		if i > 0 && !e.think(ctx, rng) {
			return ctx.Err()
		}
		if err := step(); err != nil {
			if errors.Is(err, errNothingToDo) {
				return nil
			}
			return err
		}
	}
	return nil
}

// readBody fetches one whole message and checks its integrity.
func (e *sessionEnv) readBody(ctx context.Context, c *imapclient.Client, u workload.User, seq uint32) error {
	b, err := c.FetchBody(ctx, seq)
	if err != nil || e.onBodyRead == nil {
		return err
	}
	if ierr := e.onBodyRead(u.Address, b); ierr != nil {
		// A corrupted body is an error of the read that returned it: one
		// more, failed, FETCH_NUM_BODYALL.
		e.obs.Observe(measure.Observation{Function: measure.IMAPFetchBody, Start: time.Now(),
			Class: measure.Integrity, Err: ierr})
	}
	return nil
}

// fetchNewest fetches the envelopes of the newest count messages.
func (e *sessionEnv) fetchNewest(ctx context.Context, c *imapclient.Client, mb imapclient.Mailbox, u workload.User, count int) error {
	if mb.Messages == 0 {
		return nil
	}
	n := uint32(count)
	from := uint32(1)
	if mb.Messages > n {
		from = mb.Messages - n + 1
	}
	infos, err := c.FetchRangeEnvelope(ctx, from, mb.Messages)
	if err == nil && mb.Name == "INBOX" {
		e.noteSeen(u, infos)
	}
	return err
}

func (e *sessionEnv) noteSeen(u workload.User, infos []imapclient.MessageInfo) {
	if e.onSeen != nil && len(infos) > 0 {
		e.onSeen(u.Address, infos, time.Now())
	}
}

// imapSession connects, runs body, and logs out. The logout is not timed.
func (e *sessionEnv) imapSession(ctx context.Context, u workload.User, rng *rand.Rand, body func(*imapclient.Client) error) error {
	c, err := imapclient.Connect(ctx, e.imap, u.Login, u.Password)
	if err != nil {
		return err
	}
	defer c.Close()
	if !e.think(ctx, rng) {
		return ctx.Err()
	}
	if err := body(c); err != nil {
		return err
	}
	_ = c.Logout(ctx)
	return nil
}

// newMessage builds the next message of this run and its envelope.
func (e *sessionEnv) newMessage(from string, to []string, rng *rand.Rand) (message.Envelope, int, uint64) {
	seq := e.msgSeq.Add(1)
	env := message.Envelope{
		ID:      message.NewID(e.runID, seq),
		From:    from,
		To:      to,
		Subject: fmt.Sprintf("mailbench message %d", seq),
		Sent:    time.Now(),
	}
	return env, e.sizes.Pick(rng), rng.Uint64()
}

func (e *sessionEnv) sendSession(ctx context.Context, u workload.User, rng *rand.Rand) error {
	to := e.rcpts.pick(rng, e.users, u)
	env, size, variant := e.newMessage(u.Address, to, rng)
	// Submission authenticates as the sending user when auth is set.
	sc := e.smtp
	sc.Username, sc.Password = u.Login, u.Password
	if err := e.submit(ctx, sc, env, size, variant, workload.Send); err != nil {
		return err
	}
	if !e.think(ctx, rng) {
		return ctx.Err()
	}
	// The copy to Sent, as a mail client saves what it sent.
	return e.imapSession(ctx, u, rng, func(c *imapclient.Client) error {
		msg := e.gen.Message(env, size, variant)
		_, err := c.Append(ctx, e.cfg.Mailboxes.Sent, msg, []string{`\Seen`}, env.Sent)
		return err
	})
}

// inbound delivers one message from a remote sender to local users.
func (e *sessionEnv) inbound(ctx context.Context, rng *rand.Rand) error {
	to := e.rcpts.pickLocal(rng, e.users)
	from := fmt.Sprintf("sender%d@%s", 1+rng.IntN(1000), e.cfg.Users.RemoteDomain)
	env, size, variant := e.newMessage(from, to, rng)
	return e.submit(ctx, e.inboundTo, env, size, variant, workload.Inbound)
}

// submit sends one message over a fresh SMTP connection (SMTP Connect, SMTP
// Data) and reports what the server accepted to the ledger.
func (e *sessionEnv) submit(ctx context.Context, sc smtpclient.Config, env message.Envelope, size int, variant uint64, kind workload.SessionKind) error {
	c, err := smtpclient.Connect(ctx, sc)
	if err != nil {
		return err
	}
	defer c.Close()
	env.Sent = time.Now()
	msg := e.gen.Message(env, size, variant)
	res, err := c.Send(ctx, env.From, env.To, bytes.NewReader(msg))
	if err != nil {
		if e.onRejected != nil && measure.Classify(err) == measure.Protocol {
			e.onRejected()
		}
		return err
	}
	accepted := time.Now()
	if e.onSent != nil {
		sm := measure.Submission{ID: env.ID, Accepted: accepted, Size: int64(len(msg))}
		for _, a := range res.Accepted {
			if domainOf(a) == e.cfg.Users.LocalDomain {
				sm.Local = append(sm.Local, a)
			} else {
				sm.Remote = append(sm.Remote, a)
			}
		}
		e.onSent(sm)
	}
	_ = c.Quit(ctx)
	return nil
}

func domainOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == '@' {
			return addr[i+1:]
		}
	}
	return ""
}
