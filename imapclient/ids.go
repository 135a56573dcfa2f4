package imapclient

import (
	"context"
	"errors"

	"github.com/mailbench/mailbench/delivery"
	imap "github.com/mailbench/mailbench/internal/goimap"
	goimap "github.com/mailbench/mailbench/internal/goimap/imapclient"
	"github.com/mailbench/mailbench/measure"
)

// FetchIDs runs, under the deadline and without an Observation,
//
//	FETCH from:to (UID INTERNALDATE BODY.PEEK[HEADER.FIELDS (…the range fetches' fields…)])
//
// and returns what it learns of each message (Seq, UID, ID, Sent,
// InternalDate). It is
// not a timed function: a cleanup session uses it to learn which messages
// it is about to delete. to == 0 means "*".
func (c *Client) FetchIDs(ctx context.Context, from, to uint32) ([]delivery.MessageInfo, error) {
	if from == 0 {
		return nil, errors.New("imapclient: FETCH: sequence numbers start at 1")
	}
	opts := &imap.FetchOptions{UID: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{headerSection()}}
	return c.fetchInfos(ctx, "", "FETCH", imap.SeqSet{{Start: from, Stop: to}}, opts, -1)
}

// UIDFetchIDs is FetchIDs by UID: UID FETCH fromUID:toUID, untimed.
// toUID == 0 means "*".
func (c *Client) UIDFetchIDs(ctx context.Context, fromUID, toUID uint32) ([]delivery.MessageInfo, error) {
	if fromUID == 0 {
		return nil, errors.New("imapclient: UID FETCH: UIDs start at 1")
	}
	opts := &imap.FetchOptions{UID: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{headerSection()}}
	return c.fetchInfos(ctx, "", "UID FETCH", imap.UIDSet{{Start: imap.UID(fromUID), Stop: imap.UID(toUID)}}, opts, -1)
}

// Noop sends NOOP under the deadline, without an Observation: the server
// answers with the mailbox updates it has (see Config.Unilateral).
func (c *Client) Noop(ctx context.Context) error {
	return c.do(ctx, "", "NOOP", func() error { return c.lib.Noop().Wait() })
}

// UIDExpunge runs UID EXPUNGE uid (UIDPLUS) under the deadline, without an
// Observation: it removes that one message if it is flagged \Deleted.
func (c *Client) UIDExpunge(ctx context.Context, uid uint32) error {
	return c.do(ctx, "", "UID EXPUNGE", func() error {
		return c.lib.UIDExpunge(imap.UIDSetNum(imap.UID(uid))).Close()
	})
}

// HasIdle reports whether the server offers IDLE (RFC 2177, or IMAP4rev2).
func (c *Client) HasIdle() bool {
	caps := c.lib.Caps()
	return caps.Has(imap.CapIdle) || caps.Has(imap.CapIMAP4rev2)
}

// Closed is closed when the connection has ended, by Close, Logout or the
// server: a client waiting in IDLE learns there that it was dropped.
func (c *Client) Closed() <-chan struct{} { return c.lib.Closed() }

// Idling is an IDLE command in progress: the server may announce new mail
// (Config.Unilateral) until Done.
type Idling struct {
	c   *Client
	cmd *goimap.IdleCommand
}

// Idle starts IDLE and waits, under the deadline, for the server's
// continuation: that round trip is timed as "IMAP IDLE". Until Done, no other command may be sent. Waiting in IDLE
// has no deadline of its own: the caller ends it (Done) within a bounded
// time, and Done's deadline then finds a server that stopped answering.
func (c *Client) Idle(ctx context.Context) (*Idling, error) {
	var cmd *goimap.IdleCommand
	// go-imap reads in a goroutine from IDLE on (the server speaks while
	// nobody waits); LSUB's interception then goes through it.
	c.readerRunning.Store(true)
	err := c.do(ctx, measure.IMAPIdle, "IDLE", func() error {
		var err error
		cmd, err = c.lib.Idle()
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Idling{c: c, cmd: cmd}, nil
}

// Done ends IDLE (DONE) and waits, under the deadline, for its completion.
func (i *Idling) Done(ctx context.Context) error {
	return i.c.do(ctx, "", "IDLE DONE", func() error {
		if err := i.cmd.Close(); err != nil {
			return err
		}
		return i.cmd.Wait()
	})
}
