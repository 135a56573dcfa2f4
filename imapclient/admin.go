package imapclient

import (
	"context"
	"errors"
	"strings"
	"time"

	imap "github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/measure"
)

// This file holds the administrative commands of `mailbench init` and
// `mailbench clean`. None of them is a timed SPEC function: they never
// produce an Observation, whatever Config.Observer is. Like every other
// operation they run under the client's watchdog (Config.Timeout and the
// context), so a silent server cannot hang them.

// ErrNoMailbox is returned (wrapped) by the administrative commands when
// the server answers NO [NONEXISTENT] (the mailbox does not exist).
var ErrNoMailbox = errors.New("imapclient: no such mailbox")

// DeleteMailbox runs DELETE name, without an Observation. A mailbox that
// does not exist (NO [NONEXISTENT], or a NO without the code when LIST then
// does not show it) counts as deleted (nil error). Deleting a mailbox that
// has children fails on servers that refuse it (RFC 3501 §6.3.4): delete
// the children first.
func (c *Client) DeleteMailbox(ctx context.Context, name string) error {
	err := c.do(ctx, "", "DELETE", func() error {
		return c.lib.Delete(name).Wait()
	})
	if isCode(err, string(imap.ResponseCodeNonExistent)) {
		return nil
	}
	if isRefusal(err) {
		// A NO without RFC 5530's code (Cyrus: "NO Mailbox does not
		// exist"): the server's state decides.
		if ok, lerr := c.MailboxExists(ctx, name); lerr == nil && !ok {
			return nil
		}
	}
	return err
}

// MailboxExists reports whether the server lists name (LIST "" name, the
// name taken literally), without an Observation: the server's state, for
// deciding what a NO without a response code meant.
func (c *Client) MailboxExists(ctx context.Context, name string) (bool, error) {
	var found bool
	err := c.do(ctx, "", "LIST", func() error {
		boxes, err := c.lib.List("", name, nil).Collect()
		if err != nil {
			return err
		}
		for _, b := range boxes {
			if b.Mailbox == name || (strings.EqualFold(name, "INBOX") && strings.EqualFold(b.Mailbox, "INBOX")) {
				found = true
			}
		}
		return nil
	})
	return found, err
}

// isRefusal reports whether err is the server's NO or BAD to a command
// (not a connection failure or a timeout).
func isRefusal(err error) bool {
	var pe *measure.ProtocolError
	return err != nil && errors.As(err, &pe)
}

// Unsubscribe runs UNSUBSCRIBE name, without an Observation. A name that
// is not subscribed counts as success when the server says so with
// [NONEXISTENT].
func (c *Client) Unsubscribe(ctx context.Context, name string) error {
	err := c.do(ctx, "", "UNSUBSCRIBE", func() error {
		return c.lib.Unsubscribe(name).Wait()
	})
	if isCode(err, string(imap.ResponseCodeNonExistent)) {
		return nil
	}
	return err
}

// EmptyMailbox removes every message of mailbox name: SELECT name, then,
// when it holds messages, STORE 1:* +FLAGS.SILENT (\Deleted) and EXPUNGE,
// then UNSELECT (CLOSE when the server lacks UNSELECT). Nothing is timed.
// It returns how many messages the mailbox held when selected. A mailbox
// that does not exist gives an error wrapping ErrNoMailbox.
//
// Messages delivered between the SELECT and the STORE are not in 1:* as
// the client knew it, but the server may still flag them; the count is
// the SELECT's.
func (c *Client) EmptyMailbox(ctx context.Context, name string) (uint32, error) {
	var n uint32
	err := c.do(ctx, "", "SELECT", func() error {
		data, err := c.lib.Select(name, nil).Wait()
		if err != nil {
			return err
		}
		n = data.NumMessages
		return nil
	})
	if isCode(err, string(imap.ResponseCodeNonExistent)) {
		return 0, errors.Join(ErrNoMailbox, err)
	}
	if isRefusal(err) {
		if ok, lerr := c.MailboxExists(ctx, name); lerr == nil && !ok {
			return 0, errors.Join(ErrNoMailbox, err) // a NO without [NONEXISTENT]: the server's state decides
		}
	}
	if err != nil {
		return 0, err
	}
	if n > 0 {
		err = c.do(ctx, "", "STORE", func() error {
			return c.lib.Store(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.StoreFlags{
				Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true,
			}, nil).Close()
		})
		if err != nil {
			return 0, err
		}
		err = c.do(ctx, "", "EXPUNGE", func() error {
			return c.lib.Expunge().Close()
		})
		if err != nil {
			return 0, err
		}
	}
	return n, c.unselect(ctx)
}

// unselect leaves the selected mailbox without expunging more than
// EXPUNGE already did: UNSELECT when offered, else CLOSE (which expunges
// \Deleted messages, harmless here).
func (c *Client) unselect(ctx context.Context) error {
	return c.do(ctx, "", "UNSELECT", func() error {
		if c.lib.Caps().Has(imap.CapUnselect) || c.lib.Caps().Has(imap.CapIMAP4rev2) {
			return c.lib.Unselect().Wait()
		}
		return c.lib.UnselectAndExpunge().Wait()
	})
}

// ListMailboxes runs LIST "" "*" without an Observation and returns the
// mailbox names, selectable or not.
func (c *Client) ListMailboxes(ctx context.Context) ([]string, error) {
	var names []string
	err := c.do(ctx, "", "LIST", func() error {
		list, err := c.lib.List("", "*", nil).Collect()
		for _, d := range list {
			names = append(names, d.Mailbox)
		}
		return err
	})
	return names, err
}

// PutMessage runs APPEND mailbox (flags) "date" {len(msg)} without an
// Observation (mailbox population, not the timed "IMAP APPEND"). A zero
// t sends no date.
func (c *Client) PutMessage(ctx context.Context, mailbox string, msg []byte, flags []string, t time.Time) error {
	return c.do(ctx, "", "APPEND", func() error {
		opts := &imap.AppendOptions{Time: t}
		for _, f := range flags {
			opts.Flags = append(opts.Flags, imap.Flag(f))
		}
		cmd := c.lib.Append(mailbox, int64(len(msg)), opts)
		_, werr := cmd.Write(msg)
		cerr := cmd.Close()
		if _, err := cmd.Wait(); err != nil {
			return err
		}
		return errors.Join(werr, cerr)
	})
}

// PersonalNamespace runs NAMESPACE (RFC 2342), without an Observation, and
// returns the first personal namespace's prefix and hierarchy delimiter
// ("INBOX." and "." on Courier-style servers, "" and "/" on Dovecot's
// default). ok is false when the server has no personal namespace.
func (c *Client) PersonalNamespace(ctx context.Context) (prefix, delim string, ok bool, err error) {
	err = c.do(ctx, "", "NAMESPACE", func() error {
		data, err := c.lib.Namespace().Wait()
		if err != nil {
			return err
		}
		if len(data.Personal) > 0 {
			p := data.Personal[0]
			prefix, ok = p.Prefix, true
			if p.Delim != 0 {
				delim = string(p.Delim)
			}
		}
		return nil
	})
	return prefix, delim, ok, err
}
