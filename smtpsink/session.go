package smtpsink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mailbench/mailbench/delivery"
	smtp "github.com/mailbench/mailbench/internal/gosmtp"

	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/lib/msgsum"
)

// Trace header fields stamped by mailbench's message generator (one
// definition: package message).
const (
	HeaderID   = message.HeaderID
	HeaderSent = message.HeaderSent
	HeaderSum  = message.HeaderSum
)

// MaxHeaderBytes bounds the message header the sink parses.
const MaxHeaderBytes = 1 << 20

// Replies to message data the sink refuses.
var (
	errRejectTemporary = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure (mailbench fault injection)"}
	errRejectPermanent = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 3, 0}, Message: "Permanent failure (mailbench fault injection)"}
	errLineTooLong     = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Line too long in message data"}
	errHeaderTooLarge  = &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}, Message: "Message header too large"}
	errBadHeader       = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Malformed message header"}
	errDataTimeout     = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 4, 2}, Message: "Timeout reading message data"}
	errDataRead        = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Error reading message data"}
	errSave            = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Local error saving message"}
	errShuttingDown    = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Sink shutting down"}
)

type backend struct{ s *Sink }

// NewSession is called by go-smtp on the first HELO/EHLO of a connection
// (and again after STARTTLS).
func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c.Conn()}, nil
}

// session accepts any sender and recipient. go-smtp calls its methods from
// one goroutine at a time.
type session struct {
	s     *Sink
	conn  net.Conn
	from  string
	rcpts []string
}

func (ss *session) Reset()        { ss.from, ss.rcpts = "", nil }
func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	ss.from, ss.rcpts = from, nil
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.rcpts = append(ss.rcpts, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	err := ss.s.receive(ss.conn, ss.from, slices.Clone(ss.rcpts), r)
	if err != nil && err != errRejectTemporary && err != errRejectPermanent {
		ss.s.errors.Add(1)
	}
	return err
}

// receive reads one message from r, streaming the body through the hasher
// (and into SaveDir), and decides the final reply.
func (s *Sink) receive(conn net.Conn, from string, rcpts []string, r io.Reader) error {
	bufs := dataPool.Get().(*dataBuffers)
	hdr := headerFields{vals: bufs.vals[:0]}
	defer func() {
		bufs.r.Reset(nil)
		bufs.in, bufs.hl = deadlineReader{}, headerLimitReader{}
		if cap(hdr.vals) <= maxPooledVals {
			bufs.vals = hdr.vals[:0]
		}
		dataPool.Put(bufs)
	}()
	in := &bufs.in
	*in = deadlineReader{r: r, conn: conn, timeout: s.opts.ReadTimeout}
	var src io.Reader = in
	var save *saveWriter
	if s.opts.SaveDir != "" {
		f, err := os.CreateTemp(s.opts.SaveDir, ".incoming-*.eml")
		if err != nil {
			return errSave
		}
		save = &saveWriter{f: f}
		defer save.discard()
		src = io.TeeReader(in, save)
	}
	hl := &bufs.hl
	*hl = headerLimitReader{r: src, left: MaxHeaderBytes}
	br := bufs.r
	br.Reset(hl)
	err := scanHeader(br, &hdr)
	if err != nil && !(err == io.EOF && in.err == nil) {
		return dataFailure(err, in.err, save)
	}
	hl.left = -1
	// The body checksum is only for OnMessage: without it, nobody sees it.
	var hash io.Writer = io.Discard
	bodySum := func() string { return "" }
	if s.opts.OnMessage != nil {
		hash, bodySum = msgsum.NewBodyHasher()
	}
	if _, err := br.WriteTo(hash); err != nil {
		return dataFailure(err, in.err, save)
	}
	received := s.now()
	if save != nil {
		if err := save.f.Close(); err != nil || save.err != nil {
			return errSave
		}
	}

	if d := s.opts.Faults.Delay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.closing:
			t.Stop()
			return errShuttingDown
		}
	}
	if k := int64(s.opts.Faults.RejectEvery); k > 0 && s.transfers.Add(1)%k == 0 {
		s.rejected.Add(1)
		if s.opts.Faults.RejectPermanent {
			return errRejectPermanent
		}
		return errRejectTemporary
	}

	if save != nil {
		name := filepath.Join(s.opts.SaveDir, fmt.Sprintf("%d.eml", s.saved.Add(1)))
		if err := os.Rename(save.f.Name(), name); err != nil {
			return errSave
		}
		save.kept = true
	}

	hdr.strings()
	a := delivery.Arrival{
		ID:         hdr.get(fieldID),
		Received:   received,
		Sum:        hdr.get(fieldSum),
		BodySum:    bodySum(),
		From:       from,
		Recipients: rcpts,
		Bytes:      in.n,
	}
	if v := hdr.get(fieldSent); v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			a.Sent = t
		}
	}
	if s.opts.Belongs != nil && !s.opts.Belongs(a.ID) {
		// Accepted (the server must not retry it) but not this run's: kept
		// out of every figure.
		s.recordForeign(a.ID)
		return nil
	}
	n := in.n // in goes back to its pool when receive returns
	commit := func() {
		if !a.Sent.IsZero() {
			s.recordRelayDelay(received.Sub(a.Sent))
		}
		s.messages.Add(1)
		s.recipients.Add(int64(len(rcpts)))
		s.bytes.Add(n)
		if s.opts.OnMessage != nil {
			s.opts.OnMessage(a)
		}
	}
	// The message counts once its 250 is out (trackedConn.afterReply): a
	// client that did not get it will send the message again.
	if tc := tracked(conn); tc != nil {
		tc.afterReply(commit)
	} else {
		commit()
	}
	return nil
}

// tracked returns the sink's own connection under conn (through TLS), or
// nil.
func tracked(conn net.Conn) *trackedConn {
	for range 4 {
		switch c := conn.(type) {
		case *trackedConn:
			return c
		case interface{ NetConn() net.Conn }:
			conn = c.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// dataBuffers are what receive needs per message: the readers of message
// data and the scratch space for the header values it keeps.
type dataBuffers struct {
	in   deadlineReader
	hl   headerLimitReader
	r    *bufio.Reader
	vals []byte
}

// dataPool holds dataBuffers, so that a message doesn't cost a 32 KiB
// allocation (and the garbage collection after it).
var dataPool = sync.Pool{New: func() any {
	return &dataBuffers{r: bufio.NewReaderSize(nil, 32<<10), vals: make([]byte, 0, 256)}
}}

// maxPooledVals bounds the header-value scratch space kept in dataPool (a
// header may have a value of up to MaxHeaderBytes).
const maxPooledVals = 4 << 10

// dataFailure maps a failure while reading message data to the reply.
// readErr is the error of the underlying data reader, if any.
func dataFailure(err, readErr error, save *saveWriter) error {
	if readErr != nil {
		err = readErr
	}
	var se *smtp.SMTPError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return se // ErrDataTooLarge (552), errHeaderTooLarge
	case errors.Is(err, smtp.ErrTooLongLine):
		return errLineTooLong
	case errors.As(err, &ne) && ne.Timeout():
		return errDataTimeout
	case readErr != nil:
		return errDataRead
	case save != nil && save.err != nil:
		return errSave
	}
	return errBadHeader
}

// deadlineReader gives the message data one read deadline, set at its
// first read (go-smtp sets one per command line, then none for DATA): the
// whole DATA must arrive within timeout, however it trickles in, so that a
// client sending a byte now and then cannot hold a connection forever. It
// counts the bytes and remembers the first error other than io.EOF.
type deadlineReader struct {
	r       io.Reader
	conn    net.Conn
	timeout time.Duration
	armed   bool
	n       int64
	err     error
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if d.conn != nil && d.timeout > 0 && !d.armed {
		d.armed = true
		d.conn.SetReadDeadline(time.Now().Add(d.timeout))
	}
	n, err := d.r.Read(p)
	d.n += int64(n)
	if err != nil && err != io.EOF && d.err == nil {
		d.err = err
	}
	return n, err
}

// headerLimitReader fails with errHeaderTooLarge once more than left bytes
// are read; left < 0 disables the limit.
type headerLimitReader struct {
	r    io.Reader
	left int64
}

func (h *headerLimitReader) Read(p []byte) (int, error) {
	if h.left < 0 {
		return h.r.Read(p)
	}
	if h.left == 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > h.left {
		p = p[:h.left]
	}
	n, err := h.r.Read(p)
	h.left -= int64(n)
	return n, err
}

// saveWriter writes a message to a temporary file. Write never fails, so
// that a full disk doesn't look like a read error; the first write error is
// kept in err.
type saveWriter struct {
	f    *os.File
	err  error
	kept bool
}

func (w *saveWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		_, w.err = w.f.Write(p)
	}
	return len(p), nil
}

// discard removes the temporary file unless the message was kept.
func (w *saveWriter) discard() {
	if w.kept {
		return
	}
	w.f.Close()
	os.Remove(w.f.Name())
}
