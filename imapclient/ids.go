package imapclient

import (
	"context"
	"errors"

	"github.com/emersion/go-imap/v2"
)

// FetchIDs runs, under the deadline and without an Observation,
//
//	FETCH from:to (UID INTERNALDATE BODY.PEEK[HEADER.FIELDS (…the range fetches' fields…)])
//
// and returns what it learns of each message (Seq, UID, ID, Sent,
// InternalDate). It is
// not a timed function: a cleanup session uses it to learn which messages
// it is about to delete. to == 0 means "*".
func (c *Client) FetchIDs(ctx context.Context, from, to uint32) ([]MessageInfo, error) {
	if from == 0 {
		return nil, errors.New("imapclient: FETCH: sequence numbers start at 1")
	}
	opts := &imap.FetchOptions{UID: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{headerSection()}}
	return c.fetchInfos(ctx, "", "FETCH", imap.SeqSet{{Start: from, Stop: to}}, opts)
}

// UIDFetchIDs is FetchIDs by UID: UID FETCH fromUID:toUID, untimed.
// toUID == 0 means "*".
func (c *Client) UIDFetchIDs(ctx context.Context, fromUID, toUID uint32) ([]MessageInfo, error) {
	if fromUID == 0 {
		return nil, errors.New("imapclient: UID FETCH: UIDs start at 1")
	}
	opts := &imap.FetchOptions{UID: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{headerSection()}}
	return c.fetchInfos(ctx, "", "UID FETCH", imap.UIDSet{{Start: imap.UID(fromUID), Stop: imap.UID(toUID)}}, opts)
}
