// Copyright 2010 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package smtp

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
)

// A Client represents a client connection to an SMTP server.
type Client struct {
	// keep a reference to the connection so it can be used to create a TLS
	// connection later
	conn       net.Conn
	text       *textproto.Conn
	serverName string
	lmtp       bool
	ext        map[string]string // supported extensions
	localName  string            // the name to use in HELO/EHLO/LHLO
	didGreet   bool              // whether we've received greeting from server
	greetError error             // the error from the greeting
	didHello   bool              // whether we've said HELO/EHLO/LHLO
	helloError error             // the error from the hello
	rcpts      []string          // recipients accumulated for the current transaction

	// Time to wait for command responses (this includes 3xx reply to DATA).
	// Zero: the client sets no deadline, the caller's stands (mailbench
	// patch, caller-deadline.patch).
	CommandTimeout time.Duration
	// Time to wait for responses after final dot. Zero: as CommandTimeout.
	SubmissionTimeout time.Duration

	// Logger for all network activity.
	DebugWriter io.Writer

	// textWriter is what c.text writes to (write-buffer.patch).
	textWriter io.Writer
	// textPooled: c.text's buffers come from the pools (client-buffers.patch).
	textPooled bool
	// replyTexts: the last reply texts readResponse made, kept so that a
	// server's repeated replies ("2.1.0 Ok") are not allocated each time
	// (client-allocs.patch).
	replyTexts [4]string
	replyNext  int
}

// 30 seconds was chosen as it's the same duration as http.DefaultTransport's
// timeout.
var defaultDialer = net.Dialer{Timeout: 30 * time.Second}

// Dial returns a new Client connected to an SMTP server at addr. The addr must
// include a port, as in "mail.example.com:smtp".
//
// This function returns a plaintext connection. To enable TLS, use
// DialStartTLS.
func Dial(addr string) (*Client, error) {
	conn, err := defaultDialer.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	client := NewClient(conn)
	client.serverName, _, _ = net.SplitHostPort(addr)
	return client, nil
}

// DialTLS returns a new Client connected to an SMTP server via TLS at addr.
// The addr must include a port, as in "mail.example.com:smtps".
//
// A nil tlsConfig is equivalent to a zero tls.Config.
func DialTLS(addr string, tlsConfig *tls.Config) (*Client, error) {
	tlsDialer := tls.Dialer{
		NetDialer: &defaultDialer,
		Config:    tlsConfig,
	}
	conn, err := tlsDialer.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	client := NewClient(conn)
	client.serverName, _, _ = net.SplitHostPort(addr)
	return client, nil
}

// DialStartTLS returns a new Client connected to an SMTP server via STARTTLS
// at addr. The addr must include a port, as in "mail.example.com:smtp".
//
// A nil tlsConfig is equivalent to a zero tls.Config.
func DialStartTLS(addr string, tlsConfig *tls.Config) (*Client, error) {
	c, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	if err := initStartTLS(c, tlsConfig); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// NewClient returns a new Client using an existing connection and host as a
// server name to be used when authenticating.
func NewClient(conn net.Conn) *Client {
	c := &Client{
		localName: "localhost",
		// As recommended by RFC 5321. For DATA command reply (3xx one) RFC
		// recommends a slightly shorter timeout but we do not bother
		// differentiating these.
		CommandTimeout: 5 * time.Minute,
		// 10 minutes + 2 minute buffer in case the server is doing transparent
		// forwarding and also follows recommended timeouts.
		SubmissionTimeout: 12 * time.Minute,
	}

	c.setConn(conn)

	return c
}

// NewClientStartTLS creates a new Client and performs a STARTTLS command.
func NewClientStartTLS(conn net.Conn, tlsConfig *tls.Config) (*Client, error) {
	c := NewClient(conn)
	if err := initStartTLS(c, tlsConfig); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func initStartTLS(c *Client, tlsConfig *tls.Config) error {
	if err := c.hello(); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return errors.New("smtp: server doesn't support STARTTLS")
	}
	if err := c.startTLS(tlsConfig); err != nil {
		return err
	}
	return nil
}

// NewClientLMTP returns a new LMTP Client (as defined in RFC 2033) using an
// existing connection and host as a server name to be used when authenticating.
func NewClientLMTP(conn net.Conn) *Client {
	c := NewClient(conn)
	c.lmtp = true
	return c
}

// setConn sets the underlying network connection for the client.
func (c *Client) setConn(conn net.Conn) {
	c.conn = conn

	var r io.Reader = conn
	var w io.Writer = conn

	r = &lineLimitReader{
		R: conn,
		// Doubled maximum line length per RFC 5321 (Section 4.5.3.1.6)
		LineLimit: 2000,
	}

	r = io.TeeReader(r, clientDebugWriter{c})
	w = io.MultiWriter(w, clientDebugWriter{c})

	rwc := struct {
		io.Reader
		io.Writer
		io.Closer
	}{
		Reader: r,
		Writer: w,
		Closer: conn,
	}
	c.text, c.textPooled = newTextConn(rwc) // mailbench patch (client-buffers.patch)
	c.textWriter = rwc                      // mailbench patch (write-buffer.patch)
}

// mailbench patch (client-buffers.patch): the client's bufio.Reader and
// bufio.Writer come from the pools conn-buffers.patch made for the server,
// and a grown write buffer (GrowWriteBuffer) from a pool of its size class,
// instead of new buffers per connection; ReleaseBuffers gives them back.
// A client whose owner never calls ReleaseBuffers leaves them to the GC, as
// before. The textproto.Conn is textproto.NewConn(rwc) but for the closer
// it keeps, so Close closes c.conn (rwc's closer) itself.
//
// grownWriterPools[i] holds writers of (i+1) KiB: GrowWriteBuffer rounds its
// size up to a whole KiB, so a pooled writer is never more than 1 KiB larger
// than the one it replaces.
var grownWriterPools [maxWriteBuffer >> 10]sync.Pool

// ReleaseBuffers returns the client's read and write buffers to the pools
// (client-buffers.patch). Call it once nothing reads or writes through the
// client any more (after Close or Quit, with no call in progress in another
// goroutine); the Client must not be used afterwards (a use panics on nil
// buffers instead of reaching another connection's). It doesn't perform I/O.
func (c *Client) ReleaseBuffers() {
	if !c.textPooled {
		return
	}
	br, bw := c.text.R, c.text.W
	c.text.R, c.text.W = nil, nil
	c.textPooled = false
	putTextBuffers(br, bw)
}

// putTextBuffers puts a text connection's reader and writer back in their
// pools, the server's (Conn.releaseText) and the client's alike.
func putTextBuffers(br *bufio.Reader, bw *bufio.Writer) {
	br.Reset(nil)
	textReaderPool.Put(br)
	putWriter(bw)
}

// putWriter puts a pooled writer back in the pool of its size.
func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	if size := bw.Size(); size == 4096 {
		textWriterPool.Put(bw)
	} else if size%1024 == 0 && size <= maxWriteBuffer {
		grownWriterPools[size/1024-1].Put(bw)
	}
}

// mailbench patch (write-buffer.patch): GrowWriteBuffer makes the buffer
// of what the client writes at least n bytes (at most maxWriteBuffer), so
// that a message of up to n bytes, dot-stuffed with its final ".", goes
// out in one write instead of one per 4 KiB. It does nothing while bytes
// are buffered, or when the buffer is large enough already; it doesn't
// perform I/O.
func (c *Client) GrowWriteBuffer(n int) {
	w := c.text.Writer.W
	n = min(n, maxWriteBuffer)
	if c.textWriter == nil || n <= w.Size() || w.Buffered() > 0 {
		return
	}
	if !c.textPooled { // mailbench patch (client-buffers.patch)
		c.text.Writer.W = bufio.NewWriterSize(c.textWriter, n)
		return
	}
	n = (n + 1023) &^ 1023
	bw, _ := grownWriterPools[n/1024-1].Get().(*bufio.Writer)
	if bw == nil {
		bw = bufio.NewWriterSize(c.textWriter, n)
	} else {
		bw.Reset(c.textWriter)
	}
	putWriter(w)
	c.text.Writer.W = bw
}

// commandRoom is what MAIL and RCPT reserve besides the address
// (command-size.patch): the verb and " BODY=8BITMIME SIZE=n" fit.
const commandRoom = 64

// maxWriteBuffer bounds GrowWriteBuffer (write-buffer.patch): a larger
// message is written in pieces of this size.
const maxWriteBuffer = 256 << 10

// Close closes the connection.
func (c *Client) Close() error {
	return c.conn.Close() // mailbench patch (client-buffers.patch): c.text has no closer
}

// setTimeout sets the connection's deadline d from now; a d of zero or
// less sets none, and clearTimeout then clears none: the connection's
// deadline stays as its owner set it (mailbench patch,
// caller-deadline.patch). A caller that bounds each of its operations
// itself, as mailbench's smtpclient does, spares a clock read and two
// deadline calls per command. Upstream, a zero timeout meant a deadline
// of now: every command failed at once.
func (c *Client) setTimeout(d time.Duration) {
	if d > 0 {
		c.conn.SetDeadline(time.Now().Add(d))
	}
}

// clearTimeout clears the deadline setTimeout(d) set, if it set one.
func (c *Client) clearTimeout(d time.Duration) {
	if d > 0 {
		c.conn.SetDeadline(time.Time{})
	}
}

func (c *Client) greet() error {
	if c.didGreet {
		return c.greetError
	}

	// Initial greeting timeout. RFC 5321 recommends 5 minutes.
	c.setTimeout(c.CommandTimeout) // mailbench patch (caller-deadline.patch)
	defer c.clearTimeout(c.CommandTimeout)

	c.didGreet = true
	_, _, err := c.readResponse(220)
	if err != nil {
		c.greetError = err
		c.conn.Close() // mailbench patch (client-buffers.patch)
	}

	return c.greetError
}

// hello runs a hello exchange if needed.
func (c *Client) hello() error {
	if c.didHello {
		return c.helloError
	}

	if err := c.greet(); err != nil {
		return err
	}

	c.didHello = true
	if err := c.ehlo(); err != nil {
		var smtpError *SMTPError
		if errors.As(err, &smtpError) && (smtpError.Code == 500 || smtpError.Code == 502) {
			// The server doesn't support EHLO, fallback to HELO
			c.helloError = c.helo()
		} else {
			c.helloError = err
		}
	}
	return c.helloError
}

// Hello sends a HELO or EHLO to the server as the given host name.
// Calling this method is only necessary if the client needs control
// over the host name used. The client will introduce itself as "localhost"
// automatically otherwise. If Hello is called, it must be called before
// any of the other methods.
//
// If server returns an error, it will be of type *SMTPError.
func (c *Client) Hello(localName string) error {
	if err := validateLine(localName); err != nil {
		return err
	}
	if c.didHello {
		return errors.New("smtp: Hello called after other methods")
	}
	c.localName = localName
	return c.hello()
}

func (c *Client) readResponse(expectCode int) (int, string, error) {
	code, msg, err, ok := c.readBuffered(expectCode)
	if !ok {
		code, msg, err = c.text.ReadResponse(expectCode)
	}
	if protoErr, ok := err.(*textproto.Error); ok {
		err = toSMTPErr(protoErr)
	}
	return code, msg, err
}

// readBuffered reads a reply when the reader's buffer holds all of it, as
// textproto's ReadResponse does but allocating at most its text, and none
// for a one-line text met in the last few replies (mailbench patch,
// client-allocs.patch). ok false: it read nothing (the reply's end not in
// the buffer yet, or a first line that is not plainly a reply), and
// ReadResponse reads the reply.
func (c *Client) readBuffered(expectCode int) (code int, msg string, err error, ok bool) {
	r := c.text.R
	if _, err := r.Peek(1); err != nil && r.Buffered() == 0 {
		return 0, "", err, true // what ReadResponse returns from its first read
	}
	buf, _ := r.Peek(r.Buffered())
	line, rest, found := cutReplyLine(buf)
	if !found {
		return 0, "", nil, false
	}
	code, continued, text, good := parseReplyLine(line)
	if !good {
		return 0, "", nil, false
	}
	if !continued {
		msg = c.replyText(text)
	} else {
		// As ReadResponse: the texts joined by "\n"; a line that is not a
		// reply of the same code goes in whole and does not end the reply.
		var room [512]byte
		joined := append(room[:0], text...)
		for continued {
			if line, rest, found = cutReplyLine(rest); !found {
				return 0, "", nil, false
			}
			joined = append(joined, '\n')
			code2, more, text2, good := parseReplyLine(line)
			if !good || code2 != code {
				joined = append(joined, bytes.TrimRight(line, "\r\n")...)
				continue
			}
			joined = append(joined, text2...)
			continued = more
		}
		msg = string(joined)
	}
	r.Discard(len(buf) - len(rest))
	if 1 <= expectCode && expectCode < 10 && code/100 != expectCode ||
		10 <= expectCode && expectCode < 100 && code/10 != expectCode ||
		100 <= expectCode && expectCode < 1000 && code != expectCode {
		err = &textproto.Error{Code: code, Msg: msg}
	}
	return code, msg, err, true
}

// cutReplyLine returns buf's first line as textproto's ReadLine gives it
// (without its LF and one CR before it) and what follows it; found false
// when buf holds no LF.
func cutReplyLine(buf []byte) (line, rest []byte, found bool) {
	end := bytes.IndexByte(buf, '\n')
	if end < 0 {
		return nil, buf, false
	}
	line, rest = buf[:end], buf[end+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest, true
}

// parseReplyLine parses "250-text" or "250 text" as textproto's
// parseCodeLine does; good false where it fails (too short, no ' ' or '-'
// after the code, a code that is not three digits of at least 100).
func parseReplyLine(line []byte) (code int, continued bool, text []byte, good bool) {
	if len(line) < 4 || line[3] != ' ' && line[3] != '-' {
		return 0, false, nil, false
	}
	for _, d := range line[:3] {
		if d < '0' || d > '9' {
			return 0, false, nil, false
		}
	}
	code = int(line[0]-'0')*100 + int(line[1]-'0')*10 + int(line[2]-'0')
	return code, line[3] == '-', line[4:], code >= 100
}

// replyText returns b as a string, one of the last texts made if it is
// the same.
func (c *Client) replyText(b []byte) string {
	for _, s := range c.replyTexts {
		if string(b) == s {
			return s
		}
	}
	s := string(b)
	c.replyTexts[c.replyNext] = s
	c.replyNext = (c.replyNext + 1) % len(c.replyTexts)
	return s
}

// cmd is a convenience function that sends a command and returns the response
// textproto.Error returned by c.text.ReadResponse is converted into SMTPError.
func (c *Client) cmd(expectCode int, format string, args ...interface{}) (int, string, error) {
	c.setTimeout(c.CommandTimeout) // mailbench patch (caller-deadline.patch)
	defer c.clearTimeout(c.CommandTimeout)

	id, err := c.text.Cmd(format, args...)
	if err != nil {
		return 0, "", err
	}
	c.text.StartResponse(id)
	defer c.text.EndResponse(id)

	return c.readResponse(expectCode)
}

// cmdLine sends line and CRLF and reads the reply, as cmd does (mailbench
// patch, direct-command.patch): the line is written as it is, with no
// format, and not through textproto's request sequencer, which orders the
// requests of several goroutines. A Client is not for concurrent use and
// reads every reply before its next command, as MailRcptData's writes
// (pipeline.patch) rely on too.
func (c *Client) cmdLine(expectCode int, line string) (int, string, error) {
	c.setTimeout(c.CommandTimeout) // mailbench patch (caller-deadline.patch)
	defer c.clearTimeout(c.CommandTimeout)

	w := c.text.Writer.W
	w.WriteString(line)
	w.WriteString("\r\n")
	if err := w.Flush(); err != nil {
		return 0, "", err
	}
	return c.readResponse(expectCode)
}

// helo sends the HELO greeting to the server. It should be used only when the
// server does not support ehlo.
func (c *Client) helo() error {
	c.ext = nil
	_, _, err := c.cmd(250, "HELO %s", c.localName)
	return err
}

// ehlo sends the EHLO (extended hello) greeting to the server. It
// should be the preferred greeting for servers that support it.
func (c *Client) ehlo() error {
	cmd := "EHLO"
	if c.lmtp {
		cmd = "LHLO"
	}

	// mailbench patch (client-allocs.patch): the line written as it is,
	// and the reply's lines cut where they lie, not split into new slices.
	_, msg, err := c.cmdLine(250, cmd+" "+c.localName)
	if err != nil {
		return err
	}
	c.ext = ehloExtensions(msg)
	return err
}

// ehloExtensions returns the extensions an EHLO reply's text lists, one
// per line after the first, as "NAME" or "NAME ARGS" (mailbench patch,
// client-allocs.patch: upstream's Split and SplitN made a slice per line).
func ehloExtensions(msg string) map[string]string {
	ext := make(map[string]string)
	_, lines, found := strings.Cut(msg, "\n") // the first line is the server's greeting
	if !found {
		return ext
	}
	for line := range strings.SplitSeq(lines, "\n") {
		name, args, _ := strings.Cut(line, " ")
		ext[name] = args
	}
	return ext
}

// startTLS sends the STARTTLS command and encrypts all further communication.
// Only servers that advertise the STARTTLS extension support this function.
//
// A nil config is equivalent to a zero tls.Config.
//
// If server returns an error, it will be of type *SMTPError.
func (c *Client) startTLS(config *tls.Config) error {
	if err := c.hello(); err != nil {
		return err
	}
	_, _, err := c.cmd(220, "STARTTLS")
	if err != nil {
		return err
	}
	if config == nil {
		config = &tls.Config{}
	}
	if config.ServerName == "" && c.serverName != "" {
		// Make a copy to avoid polluting argument
		config = config.Clone()
		config.ServerName = c.serverName
	}
	if testHookStartTLS != nil {
		testHookStartTLS(config)
	}
	c.setConn(tls.Client(c.conn, config))
	c.didHello = false
	return nil
}

// TLSConnectionState returns the client's TLS connection state.
// The return values are their zero values if STARTTLS did
// not succeed.
func (c *Client) TLSConnectionState() (state tls.ConnectionState, ok bool) {
	tc, ok := c.conn.(*tls.Conn)
	if !ok {
		return
	}
	return tc.ConnectionState(), true
}

// Verify checks the validity of an email address on the server.
// If Verify returns nil, the address is valid. A non-nil return
// does not necessarily indicate an invalid address. Many servers
// will not verify addresses for security reasons.
//
// If server returns an error, it will be of type *SMTPError.
func (c *Client) Verify(addr string) error {
	if err := validateLine(addr); err != nil {
		return err
	}
	if err := c.hello(); err != nil {
		return err
	}
	_, _, err := c.cmd(250, "VRFY %s", addr)
	return err
}

// Auth authenticates a client using the provided authentication mechanism.
// Only servers that advertise the AUTH extension support this function.
//
// If server returns an error, it will be of type *SMTPError.
func (c *Client) Auth(a sasl.Client) error {
	if err := c.hello(); err != nil {
		return err
	}
	encoding := base64.StdEncoding
	mech, resp, err := a.Start()
	if err != nil {
		return err
	}
	var resp64 []byte
	if len(resp) > 0 {
		resp64 = make([]byte, encoding.EncodedLen(len(resp)))
		encoding.Encode(resp64, resp)
	} else if resp != nil {
		resp64 = []byte{'='}
	}
	code, msg64, err := c.cmd(0, "%s", strings.TrimSpace(fmt.Sprintf("AUTH %s %s", mech, resp64)))
	for err == nil {
		var msg []byte
		switch code {
		case 334:
			msg, err = encoding.DecodeString(msg64)
		case 235:
			// the last message isn't base64 because it isn't a challenge
			msg = []byte(msg64)
		default:
			err = toSMTPErr(&textproto.Error{Code: code, Msg: msg64})
		}
		if err == nil {
			if code == 334 {
				resp, err = a.Next(msg)
			} else {
				resp = nil
			}
		}
		if err != nil {
			// abort the AUTH
			c.cmd(501, "*")
			break
		}
		if resp == nil {
			break
		}
		resp64 = make([]byte, encoding.EncodedLen(len(resp)))
		encoding.Encode(resp64, resp)
		code, msg64, err = c.cmd(0, "%s", string(resp64))
	}
	return err
}

// Mail issues a MAIL command to the server using the provided email address.
// If the server supports the 8BITMIME extension, Mail adds the BODY=8BITMIME
// parameter.
// This initiates a mail transaction and is followed by one or more Rcpt calls.
//
// If opts is not nil, MAIL arguments provided in the structure will be added
// to the command. Handling of unsupported options depends on the extension.
//
// If server returns an error, it will be of type *SMTPError.
func (c *Client) Mail(from string, opts *MailOptions) error {
	line, err := c.mailCommand(from, opts)
	if err != nil {
		return err
	}
	if _, _, err := c.cmdLine(250, line); err != nil { // mailbench patch (direct-command.patch)
		return err
	}

	// A new transaction has started, forget the previous recipients
	// (mailbench patch, client-allocs.patch: keeping the slice's array,
	// which only this Client reads).
	c.rcpts = c.rcpts[:0]

	return nil
}

// mailCommand returns the MAIL command Mail sends, without its CRLF
// (mailbench patch, pipeline.patch: Mail's body, shared with MailRcptData).
func (c *Client) mailCommand(from string, opts *MailOptions) (string, error) {
	if err := validateLine(from); err != nil {
		return "", err
	}
	if err := c.hello(); err != nil {
		return "", err
	}

	var sb strings.Builder
	// mailbench patch (command-size.patch): room for the address and the
	// usual parameters; the builder grows for longer ones. Upstream's
	// Grow(2048) cost 2 KiB per MAIL and per RCPT.
	sb.Grow(len(from) + commandRoom)
	// mailbench patch (direct-command.patch): no format.
	sb.WriteString("MAIL FROM:<")
	sb.WriteString(from)
	sb.WriteByte('>')
	if _, ok := c.ext["8BITMIME"]; ok {
		sb.WriteString(" BODY=8BITMIME")
	}
	if _, ok := c.ext["SIZE"]; ok && opts != nil && opts.Size != 0 {
		var digits [20]byte // mailbench patch (direct-command.patch): no format
		sb.WriteString(" SIZE=")
		sb.Write(strconv.AppendInt(digits[:0], opts.Size, 10))
	}
	if opts != nil && opts.RequireTLS {
		if _, ok := c.ext["REQUIRETLS"]; ok {
			sb.WriteString(" REQUIRETLS")
		} else {
			return "", errors.New("smtp: server does not support REQUIRETLS")
		}
	}
	if opts != nil && opts.UTF8 {
		if _, ok := c.ext["SMTPUTF8"]; ok {
			sb.WriteString(" SMTPUTF8")
		} else {
			return "", errors.New("smtp: server does not support SMTPUTF8")
		}
	}
	if _, ok := c.ext["DSN"]; ok && opts != nil {
		switch opts.Return {
		case DSNReturnFull, DSNReturnHeaders:
			sb.WriteString(fmt.Sprintf(" RET=%s", string(opts.Return))) // mailbench patch (client-allocs.patch): sb stays on the stack
		case "":
			// This space is intentionally left blank
		default:
			return "", errors.New("smtp: Unknown RET parameter value")
		}
		if opts.EnvelopeID != "" {
			if !isPrintableASCII(opts.EnvelopeID) {
				return "", errors.New("smtp: Malformed ENVID parameter value")
			}
			sb.WriteString(fmt.Sprintf(" ENVID=%s", encodeXtext(opts.EnvelopeID))) // mailbench patch (client-allocs.patch): sb stays on the stack
		}
	}
	if opts != nil && opts.Auth != nil {
		if _, ok := c.ext["AUTH"]; ok {
			sb.WriteString(fmt.Sprintf(" AUTH=%s", encodeXtext(*opts.Auth))) // mailbench patch (client-allocs.patch): sb stays on the stack
		}
		// We can safely discard parameter if server does not support AUTH.
	}
	return sb.String(), nil
}

// Rcpt issues a RCPT command to the server using the provided email address.
// A call to Rcpt must be preceded by a call to Mail and may be followed by
// a Data call or another Rcpt call.
//
// If opts is not nil, RCPT arguments provided in the structure will be added
// to the command. Handling of unsupported options depends on the extension.
//
// If server returns an error, it will be of type *SMTPError.
func (c *Client) Rcpt(to string, opts *RcptOptions) error {
	line, err := rcptCommand(to, opts, c.ext)
	if err != nil {
		return err
	}
	if _, _, err := c.cmdLine(25, line); err != nil { // mailbench patch (direct-command.patch)
		return err
	}
	c.rcpts = append(c.rcpts, to)
	return nil
}

// rcptCommand returns the RCPT command Rcpt sends, without its CRLF
// (mailbench patch, pipeline.patch: Rcpt's body, shared with MailRcptData).
func rcptCommand(to string, opts *RcptOptions, ext map[string]string) (string, error) {
	if err := validateLine(to); err != nil {
		return "", err
	}

	var sb strings.Builder
	sb.Grow(len(to) + commandRoom) // mailbench patch (command-size.patch)
	// mailbench patch (direct-command.patch): no format.
	sb.WriteString("RCPT TO:<")
	sb.WriteString(to)
	sb.WriteByte('>')
	if _, ok := ext["DSN"]; ok && opts != nil {
		if len(opts.Notify) != 0 {
			sb.WriteString(" NOTIFY=")
			if err := checkNotifySet(opts.Notify); err != nil {
				return "", errors.New("smtp: Malformed NOTIFY parameter value")
			}
			for i, v := range opts.Notify {
				if i != 0 {
					sb.WriteString(",")
				}
				sb.WriteString(string(v))
			}
		}
		if opts.OriginalRecipient != "" {
			var enc string
			switch opts.OriginalRecipientType {
			case DSNAddressTypeRFC822:
				if !isPrintableASCII(opts.OriginalRecipient) {
					return "", errors.New("smtp: Illegal address")
				}
				enc = encodeXtext(opts.OriginalRecipient)
			case DSNAddressTypeUTF8:
				if _, ok := ext["SMTPUTF8"]; ok {
					enc = encodeUTF8AddrUnitext(opts.OriginalRecipient)
				} else {
					enc = encodeUTF8AddrXtext(opts.OriginalRecipient)
				}
			default:
				return "", errors.New("smtp: Unknown address type")
			}
			sb.WriteString(fmt.Sprintf(" ORCPT=%s;%s", string(opts.OriginalRecipientType), enc)) // mailbench patch (client-allocs.patch): sb stays on the stack
		}
	}
	if _, ok := ext["RRVS"]; ok && opts != nil && !opts.RequireRecipientValidSince.IsZero() {
		sb.WriteString(fmt.Sprintf(" RRVS=%s", opts.RequireRecipientValidSince.Format(time.RFC3339)))
	}
	if _, ok := ext["DELIVERBY"]; ok && opts != nil && opts.DeliverBy != nil {
		if opts.DeliverBy.Mode == DeliverByReturn && opts.DeliverBy.Time < 1 {
			return "", errors.New("smtp: DELIVERBY mode must be greater than zero with return mode")
		}
		arg := fmt.Sprintf(" BY=%d;%s", int(opts.DeliverBy.Time.Seconds()), opts.DeliverBy.Mode)
		if opts.DeliverBy.Trace {
			arg += "T"
		}
		sb.WriteString(arg)
	}
	if _, ok := ext["MT-PRIORITY"]; ok && opts != nil && opts.MTPriority != nil {
		if *opts.MTPriority < -9 || *opts.MTPriority > 9 {
			return "", errors.New("smtp: MT-PRIORITY must be between -9 and 9")
		}
		sb.WriteString(fmt.Sprintf(" MT-PRIORITY=%d", *opts.MTPriority))
	}
	return sb.String(), nil
}

// DataCommand is a pending DATA command. DataCommand is an io.WriteCloser.
// See Client.Data.
type DataCommand struct {
	client *Client
	wc     io.WriteCloser

	closeErr error

	// dw is wc for Data's commands: one allocation for both (mailbench
	// patch, client-allocs.patch).
	dw dotWriter
}

// errDataClosedTwice is what a DataCommand closed twice returns, made once
// (mailbench patch, client-allocs.patch).
var errDataClosedTwice = errors.New("smtp: data writer closed twice")

var _ io.WriteCloser = (*DataCommand)(nil)

// Write implements io.Writer.
func (cmd *DataCommand) Write(b []byte) (int, error) {
	return cmd.wc.Write(b)
}

// WriteAsIs writes b, which the caller guarantees Write would send
// unchanged: every line in it ends in CRLF (no bare CR or LF), none begins
// with ".", and b ends at a line end. It sends the same bytes as Write
// without scanning them for dot-stuffing (mailbench patch, as-is.patch): a
// generated message's body, checked once when it was built, is sent as is.
// After a CR that Write has not yet seen the end of, it is Write.
func (cmd *DataCommand) WriteAsIs(b []byte) (int, error) {
	if d, ok := cmd.wc.(*dotWriter); ok {
		return d.writeAsIs(b)
	}
	return cmd.wc.Write(b)
}

// Close implements io.Closer.
func (cmd *DataCommand) Close() error {
	var err error
	if cmd.client.lmtp {
		_, err = cmd.CloseWithLMTPResponse()
	} else {
		_, err = cmd.CloseWithResponse()
	}
	return err
}

// CloseWithResponse is equivalent to Close, but also returns the server
// response. It cannot be called when the LMTP protocol is used.
//
// If server returns an error, it will be of type *SMTPError.
func (cmd *DataCommand) CloseWithResponse() (*DataResponse, error) {
	if cmd.client.lmtp {
		return nil, errors.New("smtp: CloseWithResponse used with an LMTP client")
	}

	if err := cmd.close(); err != nil {
		return nil, err
	}

	cmd.client.setTimeout(cmd.client.SubmissionTimeout) // mailbench patch (caller-deadline.patch)
	defer cmd.client.clearTimeout(cmd.client.SubmissionTimeout)

	_, msg, err := cmd.client.readResponse(250)
	if err != nil {
		cmd.closeErr = err
		return nil, err
	}

	return &DataResponse{StatusText: msg}, nil
}

// CloseWithLMTPResponse is equivalent to Close, but also returns per-recipient
// server responses. It can only be called when the LMTP protocol is used.
//
// If server returns an error, it will be of type LMTPDataError.
func (cmd *DataCommand) CloseWithLMTPResponse() (map[string]*DataResponse, error) {
	if !cmd.client.lmtp {
		return nil, errors.New("smtp: CloseWithLMTPResponse used without an LMTP client")
	}

	if err := cmd.close(); err != nil {
		return nil, err
	}

	cmd.client.setTimeout(cmd.client.SubmissionTimeout) // mailbench patch (caller-deadline.patch)
	defer cmd.client.clearTimeout(cmd.client.SubmissionTimeout)

	resp := make(map[string]*DataResponse, len(cmd.client.rcpts))
	lmtpErr := make(LMTPDataError, len(cmd.client.rcpts))
	for i := 0; i < len(cmd.client.rcpts); i++ {
		rcpt := cmd.client.rcpts[i]
		_, msg, err := cmd.client.readResponse(250)
		if err != nil {
			if smtpErr, ok := err.(*SMTPError); ok {
				lmtpErr[rcpt] = smtpErr
			} else {
				if len(lmtpErr) > 0 {
					return resp, errors.Join(err, lmtpErr)
				}
				return resp, err
			}
		} else {
			resp[rcpt] = &DataResponse{StatusText: msg}
		}
	}

	if len(lmtpErr) > 0 {
		return resp, lmtpErr
	}
	return resp, nil
}

func (cmd *DataCommand) close() error {
	if cmd.closeErr != nil {
		return cmd.closeErr
	}

	if err := cmd.wc.Close(); err != nil {
		cmd.closeErr = err
		return err
	}

	cmd.closeErr = errDataClosedTwice // mailbench patch (client-allocs.patch)
	return nil
}

// DataResponse is the response returned by a DATA command. See
// DataCommand.CloseWithResponse.
type DataResponse struct {
	// StatusText is the status text returned by the server. It may contain
	// tracking information.
	StatusText string
}

// LMTPDataError is a collection of errors returned by an LMTP server for a
// DATA command. It holds per-recipient errors.
type LMTPDataError map[string]*SMTPError

// Error implements error.
func (lmtpErr LMTPDataError) Error() string {
	return errors.Join(lmtpErr.Unwrap()...).Error()
}

// Unwrap returns all per-recipient errors returned by the server.
func (lmtpErr LMTPDataError) Unwrap() []error {
	l := make([]error, 0, len(lmtpErr))
	for rcpt, smtpErr := range lmtpErr {
		l = append(l, fmt.Errorf("<%v>: %w", rcpt, smtpErr))
	}
	sort.Slice(l, func(i, j int) bool {
		return l[i].Error() < l[j].Error()
	})
	return l
}

// Data issues a DATA command to the server and returns a writer that
// can be used to write the mail headers and body. The caller should
// close the writer before calling any more methods on c. A call to
// Data must be preceded by one or more calls to Rcpt.
func (c *Client) Data() (*DataCommand, error) {
	_, _, err := c.cmdLine(354, "DATA") // mailbench patch (direct-command.patch)
	if err != nil {
		return nil, err
	}
	// mailbench patch (dot-writer.patch; client-allocs.patch: the writer
	// inside the command).
	cmd := &DataCommand{client: c, dw: dotWriter{w: &c.text.Writer}}
	cmd.wc = &cmd.dw
	return cmd, nil
}

// MailRcptData starts a transaction as Mail, Rcpt for each of to (with
// rcptOpts) and Data do, and returns the DATA writer when DATA is
// accepted (mailbench patch, pipeline.patch). When the server advertises
// PIPELINING (RFC 2920), the commands go out in one write and their
// replies are read afterwards, in order, each within CommandTimeout: two
// round trips per message (this and the message) instead of three plus
// one per recipient. Without it, they are sent one at a time, and no RCPT
// or DATA follows a refused MAIL.
//
// rcptErrs[i] is the error of to[i]'s RCPT: nil when accepted, else the
// server's reply, or MAIL's error when MAIL was refused (and RCPT not sent,
// or accepted regardless).
// err is MAIL's or DATA's refusal (an *SMTPError), a malformed address or
// an I/O error, after which the connection's state is unknown. data is not
// nil exactly when err is nil: at least one recipient was accepted and DATA
// answered 354. When MAIL is accepted and no recipient is, err is
// ErrNoRecipient (wrapping DATA's refusal, with PIPELINING); a server that
// answers that DATA with 354 anyway gets an empty message's end (RFC 2920,
// section 3.1).
func (c *Client) MailRcptData(from string, opts *MailOptions, to []string, rcptOpts *RcptOptions) (rcptErrs []error, data *DataCommand, err error) {
	rcptErrs = make([]error, len(to))
	if len(to) == 0 {
		return rcptErrs, nil, ErrNoRecipient
	}
	mail, err := c.mailCommand(from, opts)
	if err != nil {
		return rcptErrs, nil, err
	}
	lines := make([]string, 0, len(to)+2)
	lines = append(lines, mail)
	for _, addr := range to {
		line, err := rcptCommand(addr, rcptOpts, c.ext)
		if err != nil {
			return rcptErrs, nil, err
		}
		lines = append(lines, line)
	}
	if _, ok := c.ext["PIPELINING"]; !ok {
		return c.mailRcptDataInTurn(lines, to, rcptErrs)
	}
	lines = append(lines, "DATA")

	defer c.clearTimeout(c.CommandTimeout) // mailbench patch (caller-deadline.patch)
	c.setTimeout(c.CommandTimeout)
	w := c.text.Writer.W
	for _, line := range lines {
		w.WriteString(line)
		w.WriteString("\r\n")
	}
	if err := w.Flush(); err != nil {
		return rcptErrs, nil, err
	}
	c.rcpts = nil
	read := func(expectCode int) error {
		c.setTimeout(c.CommandTimeout) // mailbench patch (caller-deadline.patch)
		_, _, err := c.readResponse(expectCode)
		return err
	}
	mailErr := read(250)
	if mailErr != nil && !isReply(mailErr) {
		return rcptErrs, nil, mailErr
	}
	for i, addr := range to {
		err := read(25)
		if err != nil && !isReply(err) {
			return rcptErrs, nil, err
		}
		if err == nil && mailErr != nil {
			err = mailErr // accepted outside a transaction
		}
		rcptErrs[i] = err
		if err == nil {
			c.rcpts = append(c.rcpts, addr)
		}
	}
	dataErr := read(354)
	if dataErr != nil && !isReply(dataErr) {
		return rcptErrs, nil, dataErr
	}
	if dataErr != nil {
		switch {
		case mailErr != nil:
			return rcptErrs, nil, mailErr
		case len(c.rcpts) == 0:
			return rcptErrs, nil, fmt.Errorf("%w: %w", ErrNoRecipient, dataErr)
		}
		return rcptErrs, nil, dataErr
	}
	if mailErr != nil || len(c.rcpts) == 0 {
		// 354 with no transaction to carry: end an empty message.
		if err := c.endEmptyData(); err != nil {
			return rcptErrs, nil, err
		}
		if mailErr != nil {
			return rcptErrs, nil, mailErr
		}
		return rcptErrs, nil, ErrNoRecipient
	}
	return rcptErrs, &DataCommand{client: c, wc: newDotWriter(&c.text.Writer)}, nil
}

// ErrNoRecipient is MailRcptData's error when no recipient was accepted
// (mailbench patch, pipeline.patch).
var ErrNoRecipient = errors.New("smtp: no recipient accepted")

// mailRcptDataInTurn sends MailRcptData's lines (MAIL, the RCPTs) one at a
// time, as Mail and Rcpt do, then Data.
func (c *Client) mailRcptDataInTurn(lines []string, to []string, rcptErrs []error) ([]error, *DataCommand, error) {
	if _, _, err := c.cmd(250, "%s", lines[0]); err != nil {
		for i := range rcptErrs {
			rcptErrs[i] = err
		}
		return rcptErrs, nil, err
	}
	c.rcpts = nil
	for i, addr := range to {
		_, _, err := c.cmd(25, "%s", lines[1+i])
		if err != nil && !isReply(err) {
			return rcptErrs, nil, err
		}
		rcptErrs[i] = err
		if err == nil {
			c.rcpts = append(c.rcpts, addr)
		}
	}
	if len(c.rcpts) == 0 {
		return rcptErrs, nil, ErrNoRecipient
	}
	w, err := c.Data()
	return rcptErrs, w, err
}

// endEmptyData ends a DATA that was accepted with nothing to send, and
// reads the reply to it, whatever it is.
func (c *Client) endEmptyData() error {
	c.setTimeout(c.CommandTimeout) // mailbench patch (caller-deadline.patch)
	w := c.text.Writer.W
	w.WriteString(".\r\n")
	if err := w.Flush(); err != nil {
		return err
	}
	if _, _, err := c.readResponse(250); err != nil && !isReply(err) {
		return err
	}
	return nil
}

// isReply reports whether err is the server's reply (an *SMTPError), after
// which the connection goes on, rather than a failure to talk.
func isReply(err error) bool {
	var se *SMTPError
	return errors.As(err, &se)
}

// SendMail will use an existing connection to send an email from
// address from, to addresses to, with message r.
//
// This function does not start TLS, nor does it perform authentication. Use
// DialStartTLS and Auth before-hand if desirable.
//
// The addresses in the to parameter are the SMTP RCPT addresses.
//
// The r parameter should be an RFC 822-style email with headers
// first, a blank line, and then the message body. The lines of r
// should be CRLF terminated. The r headers should usually include
// fields such as "From", "To", "Subject", and "Cc".  Sending "Bcc"
// messages is accomplished by including an email address in the to
// parameter but not including it in the r headers.
func (c *Client) SendMail(from string, to []string, r io.Reader) error {
	var err error

	var opts *MailOptions
	if !isASCII(from) || !allASCII(to) {
		opts = &MailOptions{UTF8: true}
	}
	if err = c.Mail(from, opts); err != nil {
		return err
	}
	for _, addr := range to {
		if err = c.Rcpt(addr, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	_, err = io.Copy(w, r)
	if err != nil {
		return err
	}
	return w.Close()
}

var testHookStartTLS func(*tls.Config) // nil, except for tests

func sendMail(addr string, implicitTLS bool, a sasl.Client, from string, to []string, r io.Reader) error {
	var (
		c   *Client
		err error
	)
	if implicitTLS {
		c, err = DialTLS(addr, nil)
	} else {
		c, err = DialStartTLS(addr, nil)
	}
	if err != nil {
		return err
	}
	defer c.Close()

	if a != nil {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("smtp: server doesn't support AUTH")
		}
		if err = c.Auth(a); err != nil {
			return err
		}
	}

	if err := c.SendMail(from, to, r); err != nil {
		return err
	}

	return c.Quit()
}

// SendMail connects to the server at addr, switches to TLS, authenticates with
// the optional SASL client, and then sends an email from address from, to
// addresses to, with message r. The addr must include a port, as in
// "mail.example.com:smtp".
//
// The addresses in the to parameter are the SMTP RCPT addresses.
//
// The r parameter should be an RFC 822-style email with headers
// first, a blank line, and then the message body. The lines of r
// should be CRLF terminated. The r headers should usually include
// fields such as "From", "To", "Subject", and "Cc".  Sending "Bcc"
// messages is accomplished by including an email address in the to
// parameter but not including it in the r headers.
//
// SendMail is intended to be used for very simple use-cases. If you want to
// customize SendMail's behavior, use a Client instead.
//
// The SendMail function and the go-smtp package are low-level
// mechanisms and provide no support for DKIM signing (see go-msgauth), MIME
// attachments (see the mime/multipart package or the go-message package), or
// other mail functionality.
func SendMail(addr string, a sasl.Client, from string, to []string, r io.Reader) error {
	return sendMail(addr, false, a, from, to, r)
}

// SendMailTLS works like SendMail, but with implicit TLS.
func SendMailTLS(addr string, a sasl.Client, from string, to []string, r io.Reader) error {
	return sendMail(addr, true, a, from, to, r)
}

// Extension reports whether an extension is support by the server.
// The extension name is case-insensitive. If the extension is supported,
// Extension also returns a string that contains any parameters the
// server specifies for the extension.
func (c *Client) Extension(ext string) (bool, string) {
	if err := c.hello(); err != nil {
		return false, ""
	}
	ext = strings.ToUpper(ext)
	param, ok := c.ext[ext]
	return ok, param
}

// SupportsAuth checks whether an authentication mechanism is supported.
func (c *Client) SupportsAuth(mech string) bool {
	if err := c.hello(); err != nil {
		return false
	}
	mechs, ok := c.ext["AUTH"]
	if !ok {
		return false
	}
	for _, m := range strings.Split(mechs, " ") {
		if strings.EqualFold(m, mech) {
			return true
		}
	}
	return false
}

// MaxMessageSize returns the maximum message size accepted by the server.
// 0 means unlimited.
//
// If the server doesn't convey this information, ok = false is returned.
func (c *Client) MaxMessageSize() (size int, ok bool) {
	if err := c.hello(); err != nil {
		return 0, false
	}
	v := c.ext["SIZE"]
	if v == "" {
		return 0, false
	}
	size, err := strconv.Atoi(v)
	if err != nil || size < 0 {
		return 0, false
	}
	return size, true
}

// Reset sends the RSET command to the server, aborting the current mail
// transaction.
func (c *Client) Reset() error {
	if err := c.hello(); err != nil {
		return err
	}
	if _, _, err := c.cmd(250, "RSET"); err != nil {
		return err
	}

	// allow custom HELLO again
	c.didHello = false
	c.helloError = nil

	c.rcpts = nil
	return nil
}

// Noop sends the NOOP command to the server. It does nothing but check
// that the connection to the server is okay.
func (c *Client) Noop() error {
	if err := c.hello(); err != nil {
		return err
	}
	_, _, err := c.cmd(250, "NOOP")
	return err
}

// Quit sends the QUIT command and closes the connection to the server.
//
// If Quit fails the connection is not closed, Close should be used
// in this case.
func (c *Client) Quit() error {
	if err := c.hello(); err != nil {
		return err
	}
	_, _, err := c.cmdLine(221, "QUIT") // mailbench patch (client-allocs.patch)
	if err != nil {
		return err
	}
	return c.Close()
}

func parseEnhancedCode(s string) (EnhancedCode, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return EnhancedCode{}, fmt.Errorf("wrong amount of enhanced code parts")
	}

	code := EnhancedCode{}
	for i, part := range parts {
		num, err := strconv.Atoi(part)
		if err != nil {
			return code, err
		}
		code[i] = num
	}
	return code, nil
}

// toSMTPErr converts textproto.Error into SMTPError, parsing
// enhanced status code if it is present.
func toSMTPErr(protoErr *textproto.Error) *SMTPError {
	smtpErr := &SMTPError{
		Code:    protoErr.Code,
		Message: protoErr.Msg,
	}

	parts := strings.SplitN(protoErr.Msg, " ", 2)
	if len(parts) != 2 {
		return smtpErr
	}

	enchCode, err := parseEnhancedCode(parts[0])
	if err != nil {
		return smtpErr
	}

	msg := parts[1]

	// Per RFC 2034, enhanced code should be prepended to each line.
	msg = strings.ReplaceAll(msg, "\n"+parts[0]+" ", "\n")

	smtpErr.EnhancedCode = enchCode
	smtpErr.Message = msg
	return smtpErr
}

type clientDebugWriter struct {
	c *Client
}

func (cdw clientDebugWriter) Write(b []byte) (int, error) {
	if cdw.c.DebugWriter == nil {
		return len(b), nil
	}
	return cdw.c.DebugWriter.Write(b)
}

// validateLine checks to see if a line has CR or LF.
func validateLine(line string) error {
	if strings.ContainsAny(line, "\n\r") {
		return errors.New("smtp: a line must not contain CR or LF")
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > 127 {
			return false
		}
	}
	return true
}

func allASCII(ss []string) bool {
	for _, s := range ss {
		if !isASCII(s) {
			return false
		}
	}
	return true
}
