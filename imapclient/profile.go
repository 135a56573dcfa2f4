package imapclient

import (
	"context"
	"errors"
	"strings"

	"github.com/mailbench/mailbench/delivery"
	imap "github.com/mailbench/mailbench/internal/goimap"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// The commands of the client profiles ([population]): the FETCH item lists
// of real clients, CONDSTORE's resync, flags, moves and STATUS, each timed
// as the function the caller names.

// Has reports whether the server offers the capability ("CONDSTORE",
// "QRESYNC", "MOVE", "UIDPLUS", "IDLE", ...), by its name in any case.
func (c *Client) Has(capability string) bool {
	return c.lib.Caps().Has(imap.Cap(strings.ToUpper(capability)))
}

// SelectOptions are the resync parameters of SelectAs.
type SelectOptions struct {
	// CondStore asks SELECT … (CONDSTORE): the mailbox's HIGHESTMODSEQ.
	CondStore bool
	// QResyncModSeq, when not zero, asks SELECT … (QRESYNC (UIDValidity
	// QResyncModSeq)) (RFC 7162; EnableQResync first): the changes since
	// come with the SELECT's answer.
	UIDValidity   uint32
	QResyncModSeq uint64
}

// EnableQResync sends ENABLE QRESYNC under the deadline, untimed. From
// then on the server reports expunged messages as VANISHED.
func (c *Client) EnableQResync(ctx context.Context) error {
	return c.do(ctx, "", "ENABLE", func() error {
		_, err := c.lib.Enable(imap.CapQResync).Wait()
		return err
	})
}

// SelectAs runs SELECT name with opts, timed as fn ("" for none). The
// Mailbox's HighestModSeq is the server's (CONDSTORE) or 0.
func (c *Client) SelectAs(ctx context.Context, fn measure.Function, name string, opts SelectOptions) (Mailbox, error) {
	var mb Mailbox
	so := &imap.SelectOptions{CondStore: opts.CondStore}
	if opts.QResyncModSeq > 0 {
		so.QResync = &imap.SelectQResync{UIDValidity: opts.UIDValidity, ModSeq: opts.QResyncModSeq}
	}
	err := c.do(ctx, fn, "SELECT", func() error {
		data, err := c.lib.Select(name, so).Wait()
		if err != nil {
			return err
		}
		mb = Mailbox{Name: name, Messages: data.NumMessages, UIDNext: uint32(data.UIDNext), UIDValidity: data.UIDValidity, HighestModSeq: data.HighestModSeq}
		return nil
	})
	return mb, err
}

// fetchOptions turns a profile's item list into go-imap's options. MODSEQ
// is asked only of a server with CONDSTORE, as clients do.
func (c *Client) fetchOptions(items workload.FetchItems, changedSince uint64) *imap.FetchOptions {
	opts := &imap.FetchOptions{ChangedSince: changedSince}
	for _, it := range items {
		switch it.Name {
		case "UID":
			opts.UID = true
		case "FLAGS":
			opts.Flags = true
		case "INTERNALDATE":
			opts.InternalDate = true
		case "RFC822.SIZE":
			opts.RFC822Size = true
		case "ENVELOPE":
			opts.Envelope = true
		case "BODYSTRUCTURE":
			opts.BodyStructure = &imap.FetchItemBodyStructure{Extended: true}
		case "MODSEQ":
			opts.ModSeq = c.Has("CONDSTORE")
		case "BODY", "BODY.PEEK":
			sec := &imap.FetchItemBodySection{Part: it.Part, Peek: it.Name == "BODY.PEEK"}
			switch it.Section {
			case "HEADER":
				sec.Specifier = imap.PartSpecifierHeader
			case "HEADER.FIELDS":
				sec.Specifier, sec.HeaderFields = imap.PartSpecifierHeader, it.Fields
			case "HEADER.FIELDS.NOT":
				sec.Specifier, sec.HeaderFieldsNot = imap.PartSpecifierHeader, it.Fields
			case "TEXT":
				sec.Specifier = imap.PartSpecifierText
			case "MIME":
				sec.Specifier = imap.PartSpecifierMIME
			}
			if it.Count > 0 {
				sec.Partial = &imap.SectionPartial{Offset: it.Offset, Size: it.Count}
			}
			opts.BodySection = append(opts.BodySection, sec)
		}
	}
	if changedSince > 0 {
		opts.UID = true // CHANGEDSINCE answers carry the UID a cache needs
	}
	return opts
}

// FetchItems runs FETCH from:to of a profile's item list, timed as fn; to
// == 0 means "*". Literals are read to their end under the connection's
// caps and not kept, but for the first bytes of a section of the whole
// message (for its ID). Each delivery.MessageInfo has what the list asked of UID,
// Size, Flags, InternalDate, ModSeq and ID (X-Mailbench-Id, else the
// Message-Id of a mailbench message); keep bounds how many are returned
// (-1: all), the rest read and dropped.
func (c *Client) FetchItems(ctx context.Context, fn measure.Function, from, to uint32, items workload.FetchItems, keep int) ([]delivery.MessageInfo, error) {
	if from == 0 {
		return nil, errors.New("imapclient: FETCH: sequence numbers start at 1")
	}
	return c.fetchInfos(ctx, fn, "FETCH", imap.SeqSet{{Start: from, Stop: to}}, c.fetchOptions(items, 0), keep)
}

// UIDFetchItems is FetchItems by UID, with (CHANGEDSINCE changedSince)
// when it is not zero (CONDSTORE).
func (c *Client) UIDFetchItems(ctx context.Context, fn measure.Function, fromUID, toUID uint32, items workload.FetchItems, changedSince uint64, keep int) ([]delivery.MessageInfo, error) {
	if fromUID == 0 {
		return nil, errors.New("imapclient: UID FETCH: UIDs start at 1")
	}
	return c.fetchInfos(ctx, fn, "UID FETCH", imap.UIDSet{{Start: imap.UID(fromUID), Stop: imap.UID(toUID)}}, c.fetchOptions(items, changedSince), keep)
}

// UIDStoreFlags adds (or, with add false, removes) flags on one message
// (UID STORE uid ±FLAGS.SILENT), timed as fn.
func (c *Client) UIDStoreFlags(ctx context.Context, fn measure.Function, uid uint32, add bool, flags ...string) error {
	if uid == 0 {
		return errors.New("imapclient: UID STORE: UIDs start at 1")
	}
	sf := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true}
	if !add {
		sf.Op = imap.StoreFlagsDel
	}
	for _, f := range flags {
		sf.Flags = append(sf.Flags, imap.Flag(f))
	}
	return c.do(ctx, fn, "UID STORE", func() error {
		return c.lib.Store(imap.UIDSetNum(imap.UID(uid)), sf, nil).Close()
	})
}

// UIDMove moves one message to mailbox, timed as fn: UID MOVE (RFC 6851)
// when the server offers it, else UID COPY, UID STORE \Deleted and UID
// EXPUNGE (UIDPLUS) or EXPUNGE, as a client without MOVE does, timed as
// one operation.
func (c *Client) UIDMove(ctx context.Context, fn measure.Function, uid uint32, mailbox string) error {
	if uid == 0 {
		return errors.New("imapclient: UID MOVE: UIDs start at 1")
	}
	set := imap.UIDSetNum(imap.UID(uid))
	if c.Has("MOVE") {
		return c.do(ctx, fn, "UID MOVE", func() error {
			_, err := c.lib.Move(set, mailbox).Wait()
			return err
		})
	}
	return c.do(ctx, fn, "UID COPY", func() error {
		if _, err := c.lib.Copy(set, mailbox).Wait(); err != nil {
			return err
		}
		return c.deleteNow(set)
	})
}

// UIDDelete deletes one message, timed as fn: UID STORE +FLAGS.SILENT
// (\Deleted) then UID EXPUNGE (UIDPLUS) or, without it, EXPUNGE.
func (c *Client) UIDDelete(ctx context.Context, fn measure.Function, uid uint32) error {
	if uid == 0 {
		return errors.New("imapclient: UID STORE: UIDs start at 1")
	}
	return c.do(ctx, fn, "UID STORE", func() error { return c.deleteNow(imap.UIDSetNum(imap.UID(uid))) })
}

func (c *Client) deleteNow(set imap.UIDSet) error {
	err := c.lib.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true}, nil).Close()
	if err != nil {
		return err
	}
	if c.Has("UIDPLUS") {
		return c.lib.UIDExpunge(set).Close()
	}
	return c.lib.Expunge().Close()
}

// StatusAs runs STATUS mailbox (MESSAGES UNSEEN UIDNEXT), timed as fn.
func (c *Client) StatusAs(ctx context.Context, fn measure.Function, mailbox string) error {
	return c.do(ctx, fn, "STATUS", func() error {
		_, err := c.lib.Status(mailbox, &imap.StatusOptions{NumMessages: true, NumUnseen: true, UIDNext: true}).Wait()
		return err
	})
}
