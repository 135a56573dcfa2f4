package smtpclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"

	smtp "github.com/mailbench/mailbench/internal/gosmtp"

	"github.com/mailbench/mailbench/internal/lib/quickack"
	"github.com/mailbench/mailbench/internal/lib/replywait"
	"github.com/mailbench/mailbench/measure"
)

// TLSMode says how a connection is secured: measure.TLSMode, the type the
// config uses too.
type TLSMode = measure.TLSMode

// The TLS modes.
const (
	TLSNone     = measure.TLSNone     // plain TCP
	TLSStartTLS = measure.TLSStartTLS // EHLO, STARTTLS, handshake, EHLO again
	TLSImplicit = measure.TLSImplicit // handshake right after TCP connect (port 465)
)

// Auth mechanisms accepted in Config.Auth.
const (
	AuthNone  = "none"
	AuthPlain = "plain"
	AuthLogin = "login"
)

// DefaultTimeout is Config.Timeout when it is zero.
const DefaultTimeout = 30 * time.Second

// DefaultHeloName is Config.HeloName when it is empty.
const DefaultHeloName = "mailbench.test"

// maxReply bounds the server text kept in a ProtocolError.
const maxReply = 256

// Config says where and how to submit. The zero values of the optional
// fields select the defaults documented on each field.
type Config struct {
	Address   string      // host:port
	TLS       TLSMode     // "" means TLSNone
	TLSConfig *tls.Config // for starttls/implicit; cloned; ServerName defaults to Address's host
	// DialContext, if set, replaces net.Dialer.DialContext (an in-memory
	// network in tests).
	DialContext func(ctx context.Context, network, address string) (net.Conn, error)

	// Timeout bounds every operation (Connect, Send, Quit) as a whole; the
	// context's deadline applies too when it is earlier. Default 30s.
	Timeout time.Duration

	HeloName string // EHLO argument, default DefaultHeloName

	Auth     string // AuthNone ("" too), AuthPlain or AuthLogin
	Username string
	Password string // never logged, never in an error

	Observer measure.Observer // receives SMTP Connect and SMTP Data; nil discards

	// MaxReplyBytes bounds one server reply: its longest line, and a
	// multi-line reply's lines together. A reply past it is a protocol
	// error of the operation and ends the connection. Zero means
	// DefaultMaxReplyBytes; negative, no bound.
	MaxReplyBytes int
}

// SendResult is what Send achieved.
type SendResult struct {
	// Accepted: the recipients the server accepted, in the order given.
	// When it accepted all of them it is Send's to (the same array).
	Accepted []string
	Refused  []string // recipients the server refused, in the order given
	// RefusedReplies[i] is the server's reply to Refused[i] ("550 5.1.1 ...").
	RefusedReplies []string
	Queued         string // text of the final reply to DATA, e.g. "2.0.0 OK: queued as 1234"
}

// Client is one SMTP connection. It is NOT safe for concurrent use: one
// simulated session owns it. Close it when done (after Quit, or instead).
type Client struct {
	cfg       Config
	observer  measure.Observer
	raw       net.Conn
	conn      *limitConn
	sc        *smtp.Client
	tlsConn   *tls.Conn // nil without TLS
	breakdown measure.ConnectPhases
	broken    error // set when the connection can no longer be trusted
	closed    bool
	banner    string   // the 220 banner's first line
	wd        watchdog // every operation's; see watchdog
}

func (cfg *Config) fill() error {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HeloName == "" {
		cfg.HeloName = DefaultHeloName
	}
	if cfg.TLS == "" {
		cfg.TLS = TLSNone
	}
	switch cfg.TLS {
	case TLSNone, TLSStartTLS, TLSImplicit:
	default:
		return fmt.Errorf("smtpclient: unknown TLS mode %q", cfg.TLS)
	}
	switch strings.ToLower(cfg.Auth) {
	case "", AuthNone:
		cfg.Auth = AuthNone
	case AuthPlain, AuthLogin:
		cfg.Auth = strings.ToLower(cfg.Auth)
	default:
		return fmt.Errorf("smtpclient: unknown auth mechanism %q", cfg.Auth)
	}
	if cfg.Address == "" {
		return errors.New("smtpclient: no address")
	}
	if strings.ContainsAny(cfg.HeloName, "\r\n ") {
		return errors.New("smtpclient: HELO name contains spaces or line breaks")
	}
	return nil
}

// op is the deadline machinery of one operation: its context, its
// deadline (the earlier of the timeout and the context's), and the Client's
// watchdog once guard has armed it.
type op struct {
	ctx      context.Context
	deadline time.Time
	wd       *watchdog // nil until guard
}

// newOp starts an operation that started at now (the caller's clock read,
// shared with its observation). It is small enough to inline, so that an
// op need not be allocated.
func newOp(ctx context.Context, now time.Time, timeout time.Duration) *op {
	return &op{ctx: ctx, deadline: opDeadline(ctx, now, timeout)}
}

// opDeadline is timeout from now, or ctx's deadline when that is earlier.
func opDeadline(ctx context.Context, now time.Time, timeout time.Duration) time.Time {
	t := now.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(t) {
		return d
	}
	return t
}

// watchdog closes a Client's connection when the operation in progress
// passes its deadline or its context ends. A Client keeps one watchdog for
// all its operations (Connect, each Send, Quit), one at a time: the Client
// has one owner.
//
// Why one per Client and not one per operation: arming a timer and a
// context registration anew for every operation, and lifting them after,
// cost 6 allocations and about 1.06 µs an operation on a TCP connection
// (BenchmarkOpWatchdog; 0 and about 0.3 µs now), several per session. As imapclient's watchdog does, the timer is armed
// once and, when it fires before the running operation's deadline, re-arms
// itself for what is left; the context registration is kept while the
// operations' context stays the same (the same Done channel, which is what
// the registration watches), and stopped when it changes or the Client
// closes.
type watchdog struct {
	conn *limitConn

	mu       sync.Mutex
	running  bool      // an operation is in progress
	fired    bool      // the timer closed the connection at the running operation's deadline
	deadline time.Time // the running operation's
	timer    *time.Timer
	armed    bool            // timer will fire, at timerAt
	timerAt  time.Time       // when it will fire: at or before deadline
	done     <-chan struct{} // the Done channel stopCtx's registration watches
	stopCtx  func() bool
}

// guard clamps conn to the deadline and arms the Client's watchdog for this
// operation: it closes the connection when the deadline passes or o's
// context ends (at once if it has ended already).
func (o *op) guard(wd *watchdog, conn *limitConn) {
	o.wd = wd
	conn.setLimit(o.deadline)
	wd.start(o.ctx, conn, o.deadline)
}

func (wd *watchdog) start(ctx context.Context, conn *limitConn, deadline time.Time) {
	if d := ctx.Done(); d != wd.done {
		if wd.stopCtx != nil {
			wd.stopCtx() // a callback already on its way finds wd.done changed
		}
		wd.mu.Lock()
		wd.done, wd.stopCtx = d, nil
		wd.mu.Unlock()
		if d != nil {
			wd.stopCtx = context.AfterFunc(ctx, func() { wd.cancelled(d) })
		}
	}
	wd.mu.Lock()
	defer wd.mu.Unlock()
	wd.conn, wd.deadline, wd.running, wd.fired = conn, deadline, true, false
	if !wd.armed || deadline.Before(wd.timerAt) {
		wd.armed, wd.timerAt = true, deadline
		if wd.timer == nil {
			wd.timer = time.AfterFunc(time.Until(deadline), wd.fire)
		} else {
			wd.timer.Reset(time.Until(deadline))
		}
	}
	// A context that ended while no operation ran found nothing to close.
	if ctx.Err() != nil {
		wd.conn.Conn.Close()
	}
}

// fire is the timer's callback.
func (wd *watchdog) fire() {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.running {
		if left := time.Until(wd.deadline); left > 0 {
			// A later operation's deadline: look again then.
			wd.timerAt = wd.deadline
			wd.timer.Reset(left)
			return
		}
		wd.fired = true
		wd.conn.Conn.Close()
	}
	wd.armed = false
}

// cancelled is the context registration's callback; done is the Done
// channel it was registered for.
func (wd *watchdog) cancelled(done <-chan struct{}) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.running && wd.done == done {
		wd.conn.Conn.Close()
	}
}

func (o *op) watchdogFired() bool {
	if o.wd == nil {
		return false
	}
	o.wd.mu.Lock()
	defer o.wd.mu.Unlock()
	return o.wd.fired
}

// done ends the operation: after done returns the watchdog never closes the
// connection for it. The deadline stays in force on the connection (the
// next operation replaces it; nothing reads or writes between operations),
// so that an operation sets the connection's deadline once, not twice.
func (o *op) done() {
	if o.wd == nil {
		return
	}
	o.wd.mu.Lock()
	o.wd.running = false
	conn := o.wd.conn
	o.wd.mu.Unlock()
	conn.endLimit()
}

// release stops the watchdog's timer and context registration for good
// (the Client is closed).
func (wd *watchdog) release() {
	wd.mu.Lock()
	if wd.timer != nil {
		wd.timer.Stop()
	}
	wd.armed, wd.running = false, false
	wd.mu.Unlock()
	if wd.stopCtx != nil {
		wd.stopCtx()
		wd.stopCtx = nil
	}
}

// timedOut reports whether err is due to the operation's deadline.
func (o *op) timedOut(err error) bool {
	if o.watchdogFired() || errors.Is(err, measure.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || !time.Now().Before(o.deadline)
}

// wrap turns err from step into the error the caller sees: server refusals
// become *measure.ProtocolError, deadline expiry wraps measure.ErrTimeout,
// cancellation wraps the context's error, the rest keeps its chain.
func (c *Client) wrap(o *op, step string, err error) error {
	if err == nil {
		return nil
	}
	var se *smtp.SMTPError
	var tpe *textproto.Error
	var tpp textproto.ProtocolError
	var tooLong *errReplyTooLong
	switch {
	case errors.As(err, &tooLong):
		// The rest of the reply is unread: the connection is of no use.
		c.conn.Close()
		return &measure.ProtocolError{Op: step, Reply: tooLong.Error()}
	case errors.Is(err, smtp.ErrTooLongLine):
		// go-smtp's own bound on a reply line (2,000 bytes).
		c.conn.Close()
		return &measure.ProtocolError{Op: step, Reply: "a reply line longer than 2000 bytes"}
	case errors.As(err, &se):
		return &measure.ProtocolError{Op: step, Reply: c.redact(replyText(se.Code, se.EnhancedCode, se.Message))}
	case errors.As(err, &tpe):
		return &measure.ProtocolError{Op: step, Reply: c.redact(replyText(tpe.Code, smtp.EnhancedCode{}, tpe.Msg))}
	case errors.As(err, &tpp):
		return &measure.ProtocolError{Op: step, Reply: c.redact(truncate("malformed reply: " + string(tpp)))}
	case o.ctx.Err() != nil && !o.watchdogFired() && !errors.Is(o.ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("smtpclient: %s: %w", step, o.ctx.Err())
	case o.timedOut(err):
		return fmt.Errorf("smtpclient: %s: %w (operation deadline passed)", step, measure.ErrTimeout)
	}
	return fmt.Errorf("smtpclient: %s: %w", step, c.scrub(err))
}

// scrub returns err itself when no error in its chain mentions a secret,
// and otherwise measure.Redact's stand-in: the redacted text, and a chain
// that keeps err's class but none of its links.
func (c *Client) scrub(err error) error {
	return measure.Redact(err, measure.RedactedMask, c.secrets()...)
}

// secrets are the password and the SASL encodings that carry it, longest
// first; none without a password.
func (c *Client) secrets() []string { return measure.Secrets(c.cfg.Username, c.cfg.Password) }

// redact removes the password, and the SASL encodings that carry it, from s.
func (c *Client) redact(s string) string { return measure.Scrub(s, measure.RedactedMask, c.secrets()) }

func replyText(code int, enh smtp.EnhancedCode, msg string) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(code))
	if enh != (smtp.EnhancedCode{}) && enh != smtp.NoEnhancedCode {
		fmt.Fprintf(&b, " %d.%d.%d", enh[0], enh[1], enh[2])
	}
	if msg != "" {
		b.WriteByte(' ')
		b.WriteString(strings.ReplaceAll(msg, "\n", " / "))
	}
	return truncate(b.String())
}

func truncate(s string) string {
	if len(s) > maxReply {
		s = s[:maxReply] + "..."
	}
	return s
}

func (c *Client) observe(f measure.Function, start time.Time, d time.Duration, err error) {
	c.observer.Observe(measure.Observation{
		Function: f, Start: start, Duration: d, Class: measure.Classify(err), Err: err,
	})
}

// Connect dials cfg.Address and gets the session ready to send: TCP, TLS
// (implicit, or STARTTLS after a first EHLO), banner, EHLO, and AUTH when
// configured. It reports one "SMTP Connect" observation covering all of it,
// whether it succeeds or fails (its Connect field holds the phases reached
// once the TCP connection is up), and returns within cfg.Timeout (or ctx's
// deadline) plus scheduling slack.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, observer: cfg.Observer}
	if c.observer == nil {
		c.observer = measure.Discard
	}
	start := time.Now()
	err := c.scrub(c.connect(ctx, start))
	obs := measure.Observation{
		Function: measure.SMTPConnect, Start: start, Duration: time.Since(start),
		Class: measure.Classify(err), Err: err,
	}
	if c.raw != nil {
		p := c.breakdown
		obs.Connect = &p
	}
	c.observer.Observe(obs)
	if err != nil {
		if c.raw != nil {
			c.raw.Close()
		}
		c.wd.release()
		c.releaseBuffers()
		return nil, err
	}
	return c, nil
}

// bannerReaders holds the buffers that read a connection's banner (and
// STARTTLS's replies) before go-smtp takes over: what they hold is copied
// out (replay) before connect returns them.
var bannerReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

func (c *Client) connect(ctx context.Context, start time.Time) error {
	cfg := &c.cfg
	o := newOp(ctx, start, cfg.Timeout)
	defer o.done()

	t := time.Now()
	dctx, cancel := context.WithDeadline(ctx, o.deadline)
	dial := cfg.DialContext
	if dial == nil {
		dial = sessionDialer.DialContext
	}
	raw, err := dial(dctx, "tcp", cfg.Address)
	cancel()
	if err != nil {
		return c.wrap(o, "connect", err)
	}
	// A command's reply is waited for before it is read (package replywait).
	raw = replywait.Wrap(raw)
	c.raw = raw
	// Every ACK of the connect goes out at once, so that no server's
	// writes wait on a delayed ACK of ours (package quickack).
	qa := quickack.Wrap(raw)
	defer qa.Done()
	c.conn = &limitConn{Conn: qa}
	o.guard(&c.wd, c.conn)
	c.breakdown.TCP = time.Since(t)

	var netConn net.Conn = c.conn
	if cfg.TLS == TLSImplicit {
		tc, err := c.handshake(o)
		if err != nil {
			return err
		}
		netConn = tc
	}

	maxReply := c.cfg.MaxReplyBytes
	if maxReply == 0 {
		maxReply = DefaultMaxReplyBytes
	}
	netConn = newReplyLimitConn(netConn, maxReply)

	t = time.Now()
	br := bannerReaders.Get().(*bufio.Reader)
	br.Reset(netConn)
	defer func() { br.Reset(nil); bannerReaders.Put(br) }() // read only here, below
	tr := textproto.NewReader(br)
	_, banner, err := tr.ReadResponse(220)
	if err != nil {
		return c.wrap(o, "banner", err)
	}
	c.breakdown.Greeting = time.Since(t) // the banner; EHLO adds to it
	firstLine, _, _ := strings.Cut(banner, "\n")
	c.banner = "220 " + firstLine
	replay := []byte("220 " + firstLine + "\r\n")

	if cfg.TLS == TLSStartTLS {
		t = time.Now()
		err := c.startTLS(o, netConn, tr)
		c.breakdown.StartTLS = time.Since(t)
		c.breakdown.TLS = c.breakdown.StartTLS // the handshake adds to it
		if err != nil {
			return err
		}
		if br.Buffered() > 0 {
			// RFC 3207 §6: anything the server sent before the handshake
			// must be discarded; its presence signals an injection attempt.
			return c.wrap(o, "STARTTLS", errors.New("server sent data before the TLS handshake"))
		}
		tc, err := c.handshake(o)
		if err != nil {
			return err
		}
		netConn = newReplyLimitConn(tc, maxReply)
	} else if n := br.Buffered(); n > 0 {
		extra, _ := br.Peek(n)
		replay = append(replay, extra...)
	}

	c.sc = smtp.NewClient(&replayConn{Conn: netConn, prefix: replay})
	// No deadlines of go-smtp's own: every operation's deadline is on the
	// connection already (guard), so go-smtp's set and clear per command
	// would only be clamped to it (caller-deadline.patch, PATCHES.md).
	c.sc.CommandTimeout = 0
	c.sc.SubmissionTimeout = 0
	t = time.Now()
	if err := c.sc.Hello(cfg.HeloName); err != nil {
		return c.wrap(o, "EHLO", err)
	}
	c.breakdown.EHLO = time.Since(t)
	c.breakdown.Greeting += c.breakdown.EHLO
	if c.breakdown.TLSUsed {
		c.breakdown.FirstExchange = c.breakdown.EHLO
		if cfg.TLS == TLSImplicit {
			c.breakdown.FirstExchange = c.breakdown.Greeting // the banner, then EHLO
		}
	}

	if cfg.Auth != AuthNone {
		t = time.Now()
		var mech sasl.Client
		if cfg.Auth == AuthPlain {
			mech = sasl.NewPlainClient("", cfg.Username, cfg.Password)
		} else {
			mech = sasl.NewLoginClient(cfg.Username, cfg.Password)
		}
		if err := c.sc.Auth(mech); err != nil {
			return measure.AsAuth(c.wrap(o, "AUTH", err)) // an error reply to the credentials: the auth class
		}
		c.breakdown.Auth = time.Since(t)
	}
	return nil
}

// startTLS runs EHLO and STARTTLS on the plain connection.
func (c *Client) startTLS(o *op, conn net.Conn, tr *textproto.Reader) error {
	tw := textproto.NewWriter(bufio.NewWriter(conn))
	if err := tw.PrintfLine("EHLO %s", c.cfg.HeloName); err != nil {
		return c.wrap(o, "EHLO", err)
	}
	_, ehlo, err := tr.ReadResponse(250)
	if err != nil {
		return c.wrap(o, "EHLO", err)
	}
	offered := false
	for _, line := range strings.Split(ehlo, "\n")[1:] {
		if strings.EqualFold(strings.TrimSpace(line), "STARTTLS") {
			offered = true
		}
	}
	if !offered {
		return &measure.ProtocolError{Op: "STARTTLS", Reply: "not offered in the EHLO reply"}
	}
	t := time.Now()
	if err := tw.PrintfLine("STARTTLS"); err != nil {
		return c.wrap(o, "STARTTLS", err)
	}
	if _, _, err := tr.ReadResponse(220); err != nil {
		return c.wrap(o, "STARTTLS", err)
	}
	c.breakdown.ClearExchange = time.Since(t)
	return nil
}

// handshake runs the TLS handshake on c.conn and records it.
func (c *Client) handshake(o *op) (*tls.Conn, error) {
	cfg := &tls.Config{}
	if c.cfg.TLSConfig != nil {
		cfg = c.cfg.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(c.cfg.Address)
		if err != nil {
			host = c.cfg.Address
		}
		cfg.ServerName = host
	}
	t := time.Now()
	tc := tls.Client(c.conn, cfg)
	if err := tc.HandshakeContext(o.ctx); err != nil {
		return nil, c.wrap(o, "TLS handshake", &measure.TLSError{Err: err})
	}
	c.breakdown.Handshake = time.Since(t)
	c.breakdown.TLS += c.breakdown.Handshake // after StartTLS, if any
	c.breakdown.TLSUsed = true
	c.breakdown.Resumed = tc.ConnectionState().DidResume
	c.tlsConn = tc
	return tc, nil
}

// Extension reports whether the server advertised the ESMTP extension
// name (e.g. "STARTTLS", "AUTH", "PIPELINING") in its EHLO reply, and its
// parameter ("PLAIN LOGIN" for AUTH). It doesn't perform I/O.
func (c *Client) Extension(name string) (bool, string) {
	if c.sc == nil {
		return false, ""
	}
	return c.sc.Extension(name)
}

// Breakdown returns where the time of Connect went: StartTLS and EHLO
// are filled, as parts of TLS and Greeting. It doesn't perform I/O.
func (c *Client) Breakdown() measure.ConnectPhases { return c.breakdown }

// TLSConnectionState returns the TLS state, ok false without TLS.
func (c *Client) TLSConnectionState() (tls.ConnectionState, bool) {
	if c.tlsConn == nil {
		return tls.ConnectionState{}, false
	}
	return c.tlsConn.ConnectionState(), true
}

// Send submits one message: MAIL FROM, RCPT TO for each of to, DATA, the
// body written by msg.WriteTo (CRLF line endings, not dot-stuffed: the
// client stuffs it), and the final reply. It reports one "SMTP Data"
// observation. For a []byte message pass bytes.NewReader(b). When msg has a
// Size() int64 method and the server supports SIZE, MAIL FROM declares it.
//
// A refused RCPT TO does not fail Send while another recipient is
// accepted; see the package documentation. After a refusal the transaction
// is reset (RSET, outside the timed span) so the Client stays usable; after
// a timeout or a connection failure it is not, and later calls fail at once.
//
// Every call is one observation, except calls that fail before touching the
// network: no recipients, or a Client already closed or broken (the failure
// that broke it was observed). Those return an error and observe nothing.
func (c *Client) Send(ctx context.Context, from string, to []string, msg io.WriterTo) (SendResult, error) {
	if c.closed || c.broken != nil {
		return SendResult{}, fmt.Errorf("smtpclient: connection unusable after an earlier failure or Close: %w", net.ErrClosed)
	}
	if len(to) == 0 {
		return SendResult{}, errors.New("smtpclient: no recipients")
	}
	start := time.Now()
	res, end, err := c.send(ctx, start, from, to, msg)
	err = c.scrub(err)
	c.observe(measure.SMTPData, start, end.Sub(start), err)
	return res, err
}

func (c *Client) send(ctx context.Context, start time.Time, from string, to []string, msg io.WriterTo) (res SendResult, end time.Time, err error) {
	o := newOp(ctx, start, c.cfg.Timeout)
	o.guard(&c.wd, c.conn)
	defer o.done()

	// fail records a failure at step; refusals reset the transaction.
	fail := func(step string, err error) (SendResult, time.Time, error) {
		end := time.Now()
		werr := c.wrap(o, step, err)
		var pe *measure.ProtocolError
		if errors.As(werr, &pe) && step != "DATA final reply" {
			if rerr := c.sc.Reset(); rerr != nil {
				c.broken = c.wrap(o, "RSET", rerr)
			}
		} else if !errors.As(werr, &pe) {
			c.broken = werr
		}
		return res, end, werr
	}

	var opts *smtp.MailOptions
	if s, ok := msg.(interface{ Size() int64 }); ok {
		opts = &smtp.MailOptions{Size: s.Size()}
	}
	if err := c.sc.Mail(from, opts); err != nil {
		return fail("MAIL FROM", err)
	}
	var firstRefusal error
	for i, rcpt := range to {
		err := c.sc.Rcpt(rcpt, nil)
		if err == nil {
			if len(res.Accepted) == i {
				// All accepted so far: to's prefix, no copy (its capacity
				// capped, so a later append copies).
				res.Accepted = to[: i+1 : i+1]
			} else {
				res.Accepted = append(res.Accepted, rcpt)
			}
			continue
		}
		var se *smtp.SMTPError
		if !errors.As(err, &se) {
			return fail("RCPT TO", err)
		}
		res.Refused = append(res.Refused, rcpt)
		res.RefusedReplies = append(res.RefusedReplies, replyText(se.Code, se.EnhancedCode, se.Message))
		if firstRefusal == nil {
			firstRefusal = err
		}
	}
	if len(res.Accepted) == 0 {
		return fail("RCPT TO", firstRefusal)
	}
	if opts != nil {
		// One write for the message and its final ".", as smtp-source
		// makes (room for some dot-stuffing; a larger message is written
		// in pieces).
		c.sc.GrowWriteBuffer(int(opts.Size + opts.Size/32 + 16))
	}
	w, err := c.sc.Data()
	if err != nil {
		return fail("DATA", err)
	}
	if _, err := msg.WriteTo(w); err != nil {
		return fail("DATA body", err)
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return fail("DATA final reply", err)
	}
	res.Queued = resp.StatusText
	return res, time.Now(), nil
}

// Quit sends QUIT and closes the connection. It is not observed. It
// returns within cfg.Timeout (or ctx's deadline); the connection is closed
// whatever happens.
func (c *Client) Quit(ctx context.Context) error {
	if c.closed {
		return nil
	}
	if c.broken != nil {
		c.Close()
		return nil
	}
	o := newOp(ctx, time.Now(), c.cfg.Timeout)
	o.guard(&c.wd, c.conn)
	err := c.sc.Quit()
	o.done()
	c.Close()
	return c.wrap(o, "QUIT", err)
}

// Close closes the connection without QUIT. It is idempotent.
func (c *Client) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.wd.release()
	err := c.raw.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	c.releaseBuffers()
	return err
}

// releaseBuffers gives go-smtp's read and write buffers back to their pools
// (client-buffers.patch, PATCHES.md): the connection is closed and no
// operation is in progress (the Client has one owner), so nothing reads or
// writes through them any more. A connection per message would otherwise
// allocate them anew each time (about 13 KiB with a message's write buffer).
func (c *Client) releaseBuffers() {
	if c.sc != nil {
		c.sc.ReleaseBuffers()
	}
}

// sessionDialer dials without TCP keep-alive probes. A benchmark session
// is short and every operation has its own deadline, so probes would never
// fire; enabling them costs four setsockopt calls per connection (Go's
// default for net.Dialer) for nothing.
var sessionDialer = net.Dialer{KeepAlive: -1}
