package imapclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/mailbench/mailbench/delivery"
	imap "github.com/mailbench/mailbench/internal/goimap"
	goimap "github.com/mailbench/mailbench/internal/goimap/imapclient"

	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/lib/msgsum"
	"github.com/mailbench/mailbench/measure"
)

// Trace header fields stamped by mailbench's message generator (one
// definition: package message).
const (
	HeaderID   = message.HeaderID
	HeaderSent = message.HeaderSent
	HeaderSum  = message.HeaderSum
)

// HeaderFields are the fields requested by the two range fetches, in the
// order they go on the wire.
var HeaderFields = []string{"From", "To", "Subject", "Date", "Message-Id", HeaderID, HeaderSent}

// Mailbox is the state of a mailbox after SELECT.
type Mailbox struct {
	Name        string
	Messages    uint32 // EXISTS
	UIDNext     uint32
	UIDValidity uint32
	// HighestModSeq is the server's (CONDSTORE), from SelectAs; 0 else.
	HighestModSeq uint64
}

// SelectInbox runs SELECT INBOX, timed as "IMAP SELECT_INBOX".
func (c *Client) SelectInbox(ctx context.Context) (Mailbox, error) {
	return c.sel(ctx, measure.IMAPSelectInbox, "INBOX")
}

// SelectFolder runs SELECT name, timed as "IMAP SELECT_FOLDER".
func (c *Client) SelectFolder(ctx context.Context, name string) (Mailbox, error) {
	return c.sel(ctx, measure.IMAPSelectFolder, name)
}

func (c *Client) sel(ctx context.Context, fn measure.Function, name string) (Mailbox, error) {
	var mb Mailbox
	err := c.do(ctx, fn, "SELECT", func() error {
		data, err := c.lib.Select(name, nil).Wait()
		if err != nil {
			return err
		}
		mb = Mailbox{Name: name, Messages: data.NumMessages, UIDNext: uint32(data.UIDNext), UIDValidity: data.UIDValidity}
		return nil
	})
	return mb, err
}

// List runs LIST "" "*", timed as "IMAP LIST", and returns the mailbox names.
func (c *Client) List(ctx context.Context) ([]string, error) {
	var names []string
	err := c.do(ctx, measure.IMAPList, "LIST", func() error {
		list, err := c.lib.List("", "*", nil).Collect()
		for _, d := range list {
			names = append(names, d.Mailbox)
		}
		return err
	})
	return names, err
}

// Lsub runs a real LSUB "" "*", timed as "IMAP LSUB_NULL_WILDCARD", and
// returns the subscribed mailbox names (modified UTF-7 decoded).
//
// go-imap v2 has no LSUB and rejects `* LSUB` responses, so the command is
// written on the connection directly and its responses are taken out of the
// stream before go-imap sees them; unilateral responses in between still
// reach go-imap.
func (c *Client) Lsub(ctx context.Context) ([]string, error) {
	var names []string
	err := c.do(ctx, measure.IMAPLsub, "LSUB", func() error {
		c.lsubTag++
		tag := "MBL" + itoa(c.lsubTag)
		tap, err := c.tr.startTap(tag)
		if err != nil {
			return err
		}
		defer c.tr.stopTap(tap)
		if _, err := c.tr.Write(lsubCommand(tag)); err != nil {
			return err
		}
		if !c.readerRunning.Load() {
			// Nobody else reads: read the LSUB's responses here; those
			// that are not its own wait for go-imap's next read.
			if err := c.tr.readTap(tap); err != nil {
				return err
			}
			c.tr.mu.Lock()
			names = tap.names
			c.tr.mu.Unlock()
			return tap.err
		}
		select {
		case <-tap.done:
		case <-c.lib.Closed():
			select {
			case <-tap.done:
			default:
				return errors.New("connection closed during LSUB")
			}
		}
		// Let go-imap process what was passed through before the
		// completion (e.g. EXISTS), as it would for its own commands.
		select {
		case <-c.tr.readerIdle():
		case <-c.lib.Closed():
		}
		c.tr.mu.Lock()
		names = tap.names
		c.tr.mu.Unlock()
		return tap.err
	})
	return names, err
}

// FetchRangeEnvelope runs
//
//	FETCH from:to (ENVELOPE BODY.PEEK[HEADER.FIELDS (From To Subject Date Message-Id X-Mailbench-Id X-Mailbench-Sent)] FLAGS INTERNALDATE RFC822.SIZE UID)
//
// timed as "IMAP FETCH_RANGE_ENVELOPE_…". to == 0 means "*".
func (c *Client) FetchRangeEnvelope(ctx context.Context, from, to uint32) ([]delivery.MessageInfo, error) {
	if from == 0 {
		return nil, errors.New("imapclient: FETCH: sequence numbers start at 1")
	}
	set := imap.SeqSet{{Start: from, Stop: to}}
	opts := &imap.FetchOptions{
		Envelope:     true,
		BodySection:  []*imap.FetchItemBodySection{headerSection()},
		Flags:        true,
		InternalDate: true,
		RFC822Size:   true,
		UID:          true,
	}
	return c.fetchInfos(ctx, measure.IMAPFetchRange, "FETCH", set, opts, -1)
}

// UIDFetchRange runs
//
//	UID FETCH fromUID:toUID (UID BODY.PEEK[HEADER.FIELDS (…same…)] FLAGS RFC822.SIZE)
//
// timed as "IMAP UID_FETCH_RANGE_…". toUID == 0 means "*".
func (c *Client) UIDFetchRange(ctx context.Context, fromUID, toUID uint32) ([]delivery.MessageInfo, error) {
	if fromUID == 0 {
		return nil, errors.New("imapclient: UID FETCH: UIDs start at 1")
	}
	set := imap.UIDSet{{Start: imap.UID(fromUID), Stop: imap.UID(toUID)}}
	opts := &imap.FetchOptions{
		UID:         true,
		BodySection: []*imap.FetchItemBodySection{headerSection()},
		Flags:       true,
		RFC822Size:  true,
	}
	return c.fetchInfos(ctx, measure.IMAPUIDFetch, "UID FETCH", set, opts, -1)
}

func headerSection() *imap.FetchItemBodySection {
	return &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: HeaderFields, Peek: true}
}

// fetchInfos runs FETCH set opts, timed as fn, and returns what it learns
// of at most keep messages (-1: all; the range asked bounds them); the
// others are read and dropped, so that a server answering a "from:*"
// with a million messages costs time, not memory.
func (c *Client) fetchInfos(ctx context.Context, fn measure.Function, op string, set imap.NumSet, opts *imap.FetchOptions, keep int) ([]delivery.MessageInfo, error) {
	infos := make([]delivery.MessageInfo, 0, expectedMessages(set, keep))
	err := c.do(ctx, fn, op, func() error {
		// NextInto: go-imap's read loop decodes each message into
		// c.fetched, reusing its memory (fetch-into.patch); Next gave
		// each item boxed, through a channel. Sections' bytes beyond
		// maxKeptHeader in all are read and dropped.
		cmd := c.lib.Fetch(set, opts)
		buf := &c.fetched
		// Every message's flags are slices of one array per FETCH (a
		// new one when it is full), not a slice each.
		var flags []string
		for cmd.NextInto(buf, maxKeptHeader) {
			if keep >= 0 && len(infos) >= keep {
				// Decoded (the response is read and checked whole), and
				// not kept: nothing of it is returned, so nothing of it
				// is copied out (a list FETCH keeps none).
				continue
			}
			mi := delivery.MessageInfo{Seq: buf.SeqNum, UID: uint32(buf.UID), Size: buf.RFC822Size, InternalDate: buf.InternalDate, ModSeq: buf.ModSeq}
			if n := len(buf.Flags); n > 0 {
				if cap(flags)-len(flags) < n {
					flags = make([]string, 0, max(4*cap(infos), 2*n, 2*cap(flags)))
				}
				start := len(flags)
				for _, f := range buf.Flags {
					flags = append(flags, string(f))
				}
				mi.Flags = flags[start:len(flags):len(flags)]
			}
			if env := buf.Envelope; env != nil {
				mi.Subject = env.Subject
				mi.ID = message.IDFromMessageID(env.MessageID)
			}
			for _, sec := range buf.BodySection {
				if s := sec.Section; s != nil && (len(s.Part) > 0 || s.Specifier == imap.PartSpecifierText || s.Specifier == imap.PartSpecifierMIME) {
					continue // not the message's own header: nothing to learn
				}
				// A header section's X-Mailbench-Id wins over the
				// envelope's Message-ID, whichever came first. The same
				// ID as the envelope's is not made a string again.
				if id := headerFieldBytes(sec.Bytes, HeaderID); len(id) > 0 {
					if string(id) != mi.ID {
						mi.ID = string(id)
					}
				} else if id := message.IDFromMessageID(headerField(sec.Bytes, "Message-Id")); id != "" {
					mi.ID = id // a client profile's list may ask for Message-ID alone
				}
				mi.Sent = time.Time{}
				// UnmarshalText parses RFC 3339 from the bytes, as
				// time.Parse(time.RFC3339Nano) from a string.
				if v := headerFieldBytes(sec.Bytes, HeaderSent); len(v) > 0 {
					var t time.Time
					if err := t.UnmarshalText(v); err == nil {
						mi.Sent = t
					}
				}
			}
			infos = append(infos, mi)
		}
		return cmd.Close()
	})
	return infos, err
}

// readLiteral copies the FETCH literal lit (nil means NIL) to w and
// checks that it was complete. go-imap's reader goroutine waits until the
// literal reports an error or EOF and then resumes reading the
// connection's bufio.Reader, so from then on nobody else may read lit.
// On failure readLiteral therefore closes the client, which waits for
// that goroutine to end, and the caller must return the error at once
// without touching the command again (no Next, no Close).
func (c *Client) readLiteral(w io.Writer, lit imap.LiteralReader) error {
	if lit == nil {
		return nil
	}
	// A pooled buffer: a range fetch reads one literal per message.
	bp := literalBufs.Get().(*[]byte)
	defer literalBufs.Put(bp)
	buf := (*bp)[:min(max(lit.Size(), 512), literalBufSize)]
	var n int64
	var err error
	for {
		m, rerr := lit.Read(buf)
		n += int64(m)
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				// lit has not failed yet, so go-imap's reader still
				// waits: read lit to its end (fast, the connection is
				// closed) to release it, then wait for it to stop.
				c.tr.Conn.Close()
				for rerr == nil {
					_, rerr = lit.Read(buf)
				}
				c.Close()
				return werr
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	if err == nil && n != lit.Size() {
		err = fmt.Errorf("literal cut short at %d of %d bytes: %w", n, lit.Size(), io.ErrUnexpectedEOF)
	}
	if err != nil {
		c.Close()
		return err
	}
	return nil
}

// literalBufSize is the size of the pooled buffers readLiteral copies through.
const literalBufSize = 32 << 10

var literalBufs = sync.Pool{New: func() any { b := make([]byte, literalBufSize); return &b }}

// headerField returns the value of the first field called name (ASCII
// case-insensitive) in the message header b, or in a prefix of it, as
// parseHeader(b).Get(name) would, without building the whole header:
// surrounding blanks trimmed, folded lines joined with one space. It
// stops at the blank line that ends the header. It doesn't perform I/O.
func headerField(b []byte, name string) string {
	return string(headerFieldBytes(b, name))
}

// headerFieldBytes is headerField for a caller that needs no string: the
// value as a slice of b when the field is on one line (no copy), else
// joined into a new slice. It doesn't perform I/O.
func headerFieldBytes(b []byte, name string) []byte {
	for len(b) > 0 {
		line, rest := nextLine(b)
		b = rest
		if len(line) == 0 {
			return nil // end of the header
		}
		colon := bytes.IndexByte(line, ':')
		if colon != len(name) || !message.FieldNameIs(line[:colon], name) {
			continue
		}
		value := bytes.Trim(line[colon+1:], " \t")
		if len(b) == 0 || (b[0] != ' ' && b[0] != '\t') {
			return value
		}
		out := append([]byte(nil), value...)
		for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
			line, b = nextLine(b)
			if cont := bytes.Trim(line, " \t"); len(cont) > 0 {
				if len(out) > 0 {
					out = append(out, ' ')
				}
				out = append(out, cont...)
			}
		}
		return out
	}
	return nil
}

// nextLine splits b after its first line; line has no CRLF or LF.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	return bytes.TrimSuffix(line, []byte("\r")), rest
}

// expectedMessages is how many messages a FETCH of set is expected to
// return, for the capacity of its result: the range's size when it is
// closed, at most keep (when keep >= 0) and at most 64 (a larger answer
// grows the slice as it comes).
func expectedMessages(set imap.NumSet, keep int) int {
	n := 0
	switch s := set.(type) {
	case imap.SeqSet:
		for _, r := range s {
			if r.Stop != 0 && r.Stop >= r.Start {
				n += int(r.Stop - r.Start + 1)
			}
		}
	case imap.UIDSet:
		for _, r := range s {
			if r.Stop != 0 && r.Stop >= r.Start {
				n += int(r.Stop - r.Start + 1)
			}
		}
	}
	if keep >= 0 {
		n = min(n, keep)
	}
	return min(n, 64)
}

// parseHeader parses a message header (or a header prefix); a malformed
// tail is ignored. It doesn't perform I/O.
func parseHeader(b []byte) textproto.MIMEHeader {
	if !bytes.HasSuffix(b, []byte("\n\n")) && !bytes.HasSuffix(b, []byte("\r\n\r\n")) {
		b = append(append([]byte(nil), b...), "\r\n\r\n"...)
	}
	// The whole header is in b: a reader buffer of its size, not 4 KiB.
	h, _ := textproto.NewReader(bufio.NewReaderSize(bytes.NewReader(b), len(b))).ReadMIMEHeader()
	return h
}

// FetchBody runs FETCH seq BODY[], timed as "IMAP FETCH_NUM_BODYALL". The
// literal is streamed: only the header (up to 64 KiB) is kept, the body is
// hashed with msgsum as it arrives; the time spent hashing (mailbench's
// work, not the server's) is left out of the observed duration. BODY[]
// sets \Seen.
func (c *Client) FetchBody(ctx context.Context, seq uint32) (delivery.BodyInfo, error) {
	var bi delivery.BodyInfo
	if seq == 0 {
		return bi, errors.New("imapclient: FETCH: sequence numbers start at 1")
	}
	err := c.do(ctx, measure.IMAPFetchBody, "FETCH", func() error {
		cmd := c.lib.Fetch(imap.SeqSetNum(seq), &imap.FetchOptions{
			BodySection: []*imap.FetchItemBodySection{{}},
		})
		found := false
		for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
			for item := msg.Next(); item != nil; item = msg.Next() {
				sec, ok := item.(goimap.FetchItemDataBodySection)
				if !ok || sec.Literal == nil {
					continue
				}
				if found {
					// An extra BODY[]: consume it here rather than let
					// go-imap's discard read it (see readLiteral).
					if err := c.readLiteral(io.Discard, sec.Literal); err != nil {
						return err
					}
					continue
				}
				found = true
				hw, sum := newBodyHasher()
				bs := &bodySplitter{body: untimedWriter{w: hw, spent: &c.untimed}}
				if err := c.readLiteral(bs, sec.Literal); err != nil {
					return fmt.Errorf("BODY[] literal: %w", err)
				}
				bi = delivery.BodyInfo{Size: sec.Literal.Size(), ID: headerField(bs.header, HeaderID), Sum: headerField(bs.header, HeaderSum), BodySum: sum()}
			}
		}
		if err := cmd.Close(); err != nil {
			return err
		}
		if !found {
			return &measure.ProtocolError{Op: "FETCH", Reply: fmt.Sprintf("no BODY[] for message %d", seq)}
		}
		return nil
	})
	return bi, err
}

// newBodyHasher is msgsum.NewBodyHasher; tests replace it.
var newBodyHasher = msgsum.NewBodyHasher

// untimedWriter is mailbench's own work on the bytes of an operation (the
// body checksum): the time spent in it is added to *spent, which the
// operation's observation leaves out, so that a slow generator is not
// charged to the server.
type untimedWriter struct {
	w     io.Writer
	spent *time.Duration
}

func (u untimedWriter) Write(p []byte) (int, error) {
	t := time.Now()
	n, err := u.w.Write(p)
	*u.spent += time.Since(t)
	return n, err
}

// maxKeptHeader bounds the header bytes FetchBody and fetchInfos keep for
// parsing.
const maxKeptHeader = 64 << 10

// bodySplitter is a writer that keeps the message header (up to
// maxKeptHeader bytes) and forwards the bytes after the first blank line
// (CRLF CRLF, or LF LF) to body. It doesn't perform I/O itself.
type bodySplitter struct {
	body   io.Writer
	header []byte
	inBody bool
	last   [3]byte // the last bytes of the header seen so far (oldest first)
	seen   int     // header bytes seen, kept or not
}

func (s *bodySplitter) Write(p []byte) (int, error) {
	if s.inBody {
		return s.body.Write(p)
	}
	for i, b := range p {
		// A blank line is LF LF, or LF CR LF; at the very start CRLF or LF.
		end := false
		switch {
		case b != '\n':
		case s.seen == 0:
			end = true
		case s.seen == 1 && s.last[2] == '\r':
			end = true
		case s.last[2] == '\n':
			end = true
		case s.last[2] == '\r' && s.last[1] == '\n':
			end = true
		}
		s.last[0], s.last[1], s.last[2] = s.last[1], s.last[2], b
		s.seen++
		if end {
			s.keep(p[:i+1])
			s.inBody = true
			if _, err := s.body.Write(p[i+1:]); err != nil {
				return i + 1, err
			}
			return len(p), nil
		}
	}
	s.keep(p)
	return len(p), nil
}

func (s *bodySplitter) keep(p []byte) {
	if room := maxKeptHeader - len(s.header); room > 0 {
		if len(p) > room {
			p = p[:room]
		}
		s.header = append(s.header, p...)
	}
}

// Store runs STORE seq +FLAGS.SILENT (\Deleted), timed as
// "IMAP STORE_NUM_SET_FLAGS_DELETED".
func (c *Client) Store(ctx context.Context, seq uint32) error {
	if seq == 0 {
		return errors.New("imapclient: STORE: sequence numbers start at 1")
	}
	return c.store(ctx, measure.IMAPStore, "STORE", imap.SeqSetNum(seq))
}

// StoreRange runs STORE from:to +FLAGS.SILENT (\Deleted), timed as
// "IMAP STORE_NUM_SET_FLAGS_DELETED" like Store: one command however many
// messages it names.
func (c *Client) StoreRange(ctx context.Context, from, to uint32) error {
	if from == 0 || to < from {
		return fmt.Errorf("imapclient: STORE: range %d:%d", from, to)
	}
	var set imap.SeqSet
	set.AddRange(from, to)
	return c.store(ctx, measure.IMAPStore, "STORE", set)
}

// UIDStore runs UID STORE uid +FLAGS.SILENT (\Deleted), timed as
// "IMAP UID_STORE_NUM_SET_FLAGS_DELETED".
func (c *Client) UIDStore(ctx context.Context, uid uint32) error {
	if uid == 0 {
		return errors.New("imapclient: UID STORE: UIDs start at 1")
	}
	return c.store(ctx, measure.IMAPUIDStore, "UID STORE", imap.UIDSetNum(imap.UID(uid)))
}

func (c *Client) store(ctx context.Context, fn measure.Function, op string, set imap.NumSet) error {
	return c.do(ctx, fn, op, func() error {
		return c.lib.Store(set, &imap.StoreFlags{
			Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true,
		}, nil).Close()
	})
}

// Expunge runs EXPUNGE, timed as "IMAP EXPUNGE".
func (c *Client) Expunge(ctx context.Context) error {
	return c.do(ctx, measure.IMAPExpunge, "EXPUNGE", func() error {
		return c.lib.Expunge().Close()
	})
}

// Append runs APPEND mailbox (flags) "date" {len(msg)} with msg as the
// literal, timed as "IMAP APPEND". It returns the new UID when the server
// reports APPENDUID (UIDPLUS), else 0. A zero t sends no date.
func (c *Client) Append(ctx context.Context, mailbox string, msg []byte, flags []string, t time.Time) (uint32, error) {
	return c.AppendFrom(ctx, mailbox, bytes.NewReader(msg), int64(len(msg)), flags, t)
}

// AppendFrom is Append with the literal written by msg.WriteTo, which must
// write exactly size bytes (a generated message's Source writes its header
// and its shared body without a copy of the whole message). A msg that
// writes more or fewer bytes fails the command, at the latest at the
// operation's deadline (the server still waits for the literal), and leaves
// the connection unusable.
func (c *Client) AppendFrom(ctx context.Context, mailbox string, msg io.WriterTo, size int64, flags []string, t time.Time) (uint32, error) {
	var uid uint32
	err := c.do(ctx, measure.IMAPAppend, "APPEND", func() error {
		opts := &imap.AppendOptions{Time: t}
		for _, f := range flags {
			opts.Flags = append(opts.Flags, imap.Flag(f))
		}
		cmd := c.lib.Append(mailbox, size, opts)
		_, werr := msg.WriteTo(cmd) // go-imap fails a literal written too long or too short
		cerr := cmd.Close()
		data, err := cmd.Wait()
		if err != nil {
			return err
		}
		if werr != nil {
			return werr
		}
		if cerr != nil {
			return cerr
		}
		uid = uint32(data.UID)
		return nil
	})
	return uid, err
}

// Create runs CREATE mailbox under the deadline, without an Observation.
// A mailbox that exists counts as success: a NO [ALREADYEXISTS], or a NO
// without that code (Cyrus says "NO Mailbox already exists") when LIST
// then shows the mailbox.
func (c *Client) Create(ctx context.Context, mailbox string) error {
	err := c.do(ctx, "", "CREATE", func() error {
		return c.lib.Create(mailbox, nil).Wait()
	})
	if isCode(err, "ALREADYEXISTS") {
		return nil
	}
	if isRefusal(err) {
		// A NO without RFC 5530's code (Cyrus: "NO Mailbox already
		// exists"): the server's state decides.
		if ok, lerr := c.MailboxExists(ctx, mailbox); lerr == nil && ok {
			return nil
		}
	}
	return err
}

// Subscribe runs SUBSCRIBE name under the deadline, without an Observation.
func (c *Client) Subscribe(ctx context.Context, name string) error {
	return c.do(ctx, "", "SUBSCRIBE", func() error {
		return c.lib.Subscribe(name).Wait()
	})
}

// Status runs STATUS mailbox (MESSAGES) under the deadline, without an
// Observation, and returns the message count.
func (c *Client) Status(ctx context.Context, mailbox string) (uint32, error) {
	var n uint32
	err := c.do(ctx, "", "STATUS", func() error {
		data, err := c.lib.Status(mailbox, &imap.StatusOptions{NumMessages: true}).Wait()
		if err != nil {
			return err
		}
		if data.NumMessages == nil {
			return &measure.ProtocolError{Op: "STATUS", Reply: "no MESSAGES in reply"}
		}
		n = *data.NumMessages
		return nil
	})
	return n, err
}

// Logout sends LOGOUT and waits for its reply under the deadline (no
// Observation), then closes the connection. The connection is closed
// even when LOGOUT fails.
func (c *Client) Logout(ctx context.Context) error {
	err := c.do(ctx, "", "LOGOUT", func() error {
		return c.lib.Logout().Wait()
	})
	c.Close()
	if errors.Is(err, ErrClosed) {
		return nil // already closed: nothing to log out of
	}
	return err
}

// isCode reports whether err is a protocol error carrying response code code.
func isCode(err error, code string) bool {
	var pe *measure.ProtocolError
	return errors.As(err, &pe) && strings.Contains(pe.Reply, "["+code+"]")
}

// TemporaryRefusal reports whether err is the server's NO to a command for
// a reason that may pass: a NO without a response code (Cyrus answers a
// busy mailbox with a bare "NO System I/O error"), or with RFC 5530's
// UNAVAILABLE, SERVERBUG or INUSE. Quota, size and missing-mailbox
// refusals, BAD, and failures of the connection are not. A refused LOGIN
// (a *measure.AuthError) counts alike: under contention servers answer it
// with a bare NO too ("NO ... database is locked"); a wrong password with
// [AUTHENTICATIONFAILED] (RFC 5530) is not temporary, one without a code
// looks the same as contention and is retried as well. It doesn't perform
// I/O.
func TemporaryRefusal(err error) bool {
	var reply string
	var pe *measure.ProtocolError
	var ae *measure.AuthError
	switch {
	case errors.As(err, &pe):
		reply = pe.Reply
	case errors.As(err, &ae):
		reply = ae.Reply
	default:
		return false
	}
	rest, ok := strings.CutPrefix(reply, "NO")
	if !ok {
		return false
	}
	rest, hasCode := strings.CutPrefix(strings.TrimSpace(rest), "[")
	if !hasCode {
		return true
	}
	code, _, _ := strings.Cut(rest, "]")
	name, _, _ := strings.Cut(code, " ")
	switch strings.ToUpper(name) {
	case "UNAVAILABLE", "SERVERBUG", "INUSE":
		return true
	}
	return false
}
