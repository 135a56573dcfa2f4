package delivery

import "time"

// MessageInfo is what an IMAP read learnt of one message in a mailbox
// (imapclient's range fetches return it per message): the ledger finds
// deliveries by its ID and times them by Sent and InternalDate.
type MessageInfo struct {
	Seq, UID     uint32
	Size         int64 // RFC822.SIZE
	Flags        []string
	ID           string    // X-Mailbench-Id, "" if absent
	Sent         time.Time // X-Mailbench-Sent (RFC 3339), zero if absent or malformed
	InternalDate time.Time // only FetchRangeEnvelope asks for it
	ModSeq       uint64    // only FetchItems with MODSEQ (or CHANGEDSINCE) asks for it
	Subject      string    // from ENVELOPE; only FetchRangeEnvelope asks for it
}

// BodyInfo is what an IMAP read learnt of one streamed message body
// (imapclient's FetchBody): the ledger checks it intact by its sums.
type BodyInfo struct {
	Size    int64  // bytes of the BODY[] literal
	ID      string // X-Mailbench-Id, "" if absent
	Sum     string // X-Mailbench-Sum as stamped by the sender, "" if absent
	BodySum string // msgsum checksum of the bytes after the header's blank line
}

// Arrival is what the SMTP sink learnt of one accepted message (never the
// body): the ledger matches remote deliveries by it.
type Arrival struct {
	ID         string    // X-Mailbench-Id header value ("" if absent)
	Sent       time.Time // from X-Mailbench-Sent (RFC 3339 with nanoseconds); zero if absent or bad
	Received   time.Time // when the final "." (or the last BDAT chunk) was read
	Sum        string    // X-Mailbench-Sum header as sent ("" if absent)
	BodySum    string    // msgsum.BodySum of the received body
	From       string    // MAIL FROM address ("" for the null sender)
	Recipients []string  // RCPT TO addresses, in order
	Bytes      int64     // message size as received: header, separator and body, dot-unstuffed
}
