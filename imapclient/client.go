package imapclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"

	imap "github.com/mailbench/mailbench/internal/goimap"
	goimap "github.com/mailbench/mailbench/internal/goimap/imapclient"
	"github.com/mailbench/mailbench/internal/lib/quickack"
	"github.com/mailbench/mailbench/internal/lib/replywait"

	"github.com/mailbench/mailbench/measure"
)

// TLSMode says how the connection is secured: measure.TLSMode, the type
// the config uses too.
type TLSMode = measure.TLSMode

// The TLS modes.
const (
	TLSNone     = measure.TLSNone
	TLSStartTLS = measure.TLSStartTLS
	TLSImplicit = measure.TLSImplicit
)

// Authentication mechanisms for Config.Auth.
const (
	AuthLogin = "login" // LOGIN user pass
	AuthPlain = "plain" // AUTHENTICATE PLAIN
)

// DefaultTimeout is the per-operation deadline when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// The default bounds of what one server response may make the client hold
// (Config.MaxResponseBytes, Config.MaxLiteralBytes). No real server comes
// near them: the longest responses mailbench meets are SEARCH results of
// large folders (about 7 bytes a message: 1 MiB is 150,000 messages) and
// FETCH lists of 20 envelopes (tens of KiB). FETCH body sections are
// streamed, whatever their size, and not bounded by these.
const (
	DefaultMaxResponseBytes = 1 << 20
	DefaultMaxLiteralBytes  = 1 << 20
)

// Config says where and how to connect. The zero TLS mode is "none", the
// zero Auth is "login".
type Config struct {
	Address   string      // host:port
	TLS       TLSMode     // "none" (default), "starttls" or "implicit"
	TLSConfig *tls.Config // used for starttls and implicit; ServerName defaults to Address's host

	// Timeout is the deadline of every operation, Connect included.
	// Zero means DefaultTimeout.
	Timeout time.Duration

	Auth string // "login" (default) or "plain"

	// Observer receives one Observation per timed operation; nil records nothing.
	Observer measure.Observer

	// DialContext, if set, replaces net.Dialer.DialContext (custom transports, tests).
	DialContext func(ctx context.Context, network, address string) (net.Conn, error)

	// Unilateral, when set, is told of the mailbox updates the server
	// sends on its own (during IDLE, NOOP or any command). Its functions
	// run while go-imap reads a response (in IDLE, and with Idles, in the
	// connection's reader goroutine; otherwise while a command waits):
	// they must be quick and must not call the Client.
	Unilateral *Unilateral

	// Idles says that the client will spend most of its life in IDLE (a
	// connected client, a watched INBOX): go-imap then reads in a
	// goroutine of its own from the start, as it must during IDLE. Other
	// clients have each response read by the goroutine that waits for it
	// (no hand-off between goroutines per response, issue 37); they start
	// that goroutine at their first IDLE, which costs them a goroutine
	// more (about 3 KiB) from then on.
	Idles bool

	// MaxResponseBytes bounds one response's bytes outside its literals,
	// the greeting included; MaxLiteralBytes bounds a literal the client
	// holds as a string (a LIST name, an ENVELOPE field). A response past
	// either is a protocol error of the operation waiting for it and
	// closes the connection: a broken or hostile server costs an error,
	// never the generator's memory. Zero means the defaults above;
	// negative, no bound.
	MaxResponseBytes int64
	MaxLiteralBytes  int64
}

// poolBuffers: clients that do not idle take go-imap's buffers from its
// pool (goimap.Options.PoolBuffers); tests turn it off to compare.
var poolBuffers = true

// sessionReadBufferSize is the read buffer of a client that does not idle.
const sessionReadBufferSize = 16 << 10

func sessionReadBuffer(idles bool) int {
	if idles {
		return 0
	}
	return sessionReadBufferSize
}

// bound returns v, or def when v is zero, or 0 (no bound) when v < 0.
func bound(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Unilateral receives a selected mailbox's unsolicited updates.
type Unilateral struct {
	Exists  func(n uint32)   // * n EXISTS: the mailbox now holds n messages
	Expunge func(seq uint32) // * seq EXPUNGE: message seq is gone, later ones move down
}

// ErrClosed is returned (wrapped) by operations on a client whose
// connection is closed, e.g. after a timeout. It is classified as a
// connection error.
var ErrClosed = fmt.Errorf("imapclient: client closed: %w", net.ErrClosed)

// Client is one simulated user's IMAP connection. It is NOT safe for
// concurrent use: one session goroutine drives it, one command at a time.
//
// Every operation runs under a watchdog: when Config.Timeout elapses or the
// context is cancelled, the connection is closed, the operation returns, and
// the client is unusable afterwards (every later operation fails with
// ErrClosed).
type Client struct {
	lib       *goimap.Client
	tr        *transport
	timeout   time.Duration
	observer  measure.Observer
	breakdown measure.ConnectPhases
	closed    atomic.Bool
	lsubTag   uint64
	// untimed is the generator's own work inside the current operation
	// (hashing a fetched body), taken out of its observed duration. Only
	// the session goroutine that drives the client touches it.
	untimed  time.Duration
	greeting *greetingTap
	// wd is the watchdog guard reuses from one command to the next (nil
	// while a command holds it, or before the first).
	wd atomic.Pointer[watchdog]
	// readerRunning: go-imap reads in a goroutine of its own (from the
	// first IDLE on); before that the goroutine that waits for a response
	// reads it (goimap.Options.ReadInCaller, caller-reads.patch).
	readerRunning atomic.Bool
	// fetched holds the message being fetched (fetchInfos), its memory
	// reused from one message to the next (FetchCommand.NextInto).
	fetched goimap.FetchMessageBuffer
}

// Breakdown returns the phases of the connect that created c. It doesn't
// perform I/O.
func (c *Client) Breakdown() measure.ConnectPhases { return c.breakdown }

// Caps reports the capabilities the server advertised after login. It
// doesn't perform I/O (Connect already fetched them).
func (c *Client) Caps() []string {
	var out []string
	for name := range c.lib.Caps() {
		out = append(out, string(name))
	}
	slices.Sort(out)
	return out
}

// Close closes the connection without LOGOUT. It is safe to call more than once.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if wd := c.wd.Swap(nil); wd != nil {
		wd.release()
	}
	err := c.lib.Close()
	// The read loop has ended, and the one goroutine that drives c is
	// here: nothing reads or writes through go-imap's buffers any more.
	c.lib.ReleaseBuffers()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Connect dials cfg.Address, secures the connection per cfg.TLS, waits for
// the greeting and logs in, timing it all as one "IMAP Connect"
// observation. Once the TCP connection is established, the observation's
// Connect field carries the phases reached (see measure.ConnectPhases), on
// failure too. The password never appears in the returned error.
func Connect(ctx context.Context, cfg Config, login, password string) (*Client, error) {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	var bd measure.ConnectPhases
	dialed := false
	c, err := connect(ctx, cfg, timeout, login, password, &bd, &dialed)
	if err != nil {
		err = redact(err, secretsOf(login, password)...)
	}
	if cfg.Observer != nil {
		o := observation(measure.IMAPConnect, start, err)
		if dialed {
			p := bd
			o.Connect = &p
		}
		cfg.Observer.Observe(o)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// connect does the work of Connect, filling *bd as the phases complete and
// setting *dialed once the TCP connection is up.
func connect(parent context.Context, cfg Config, timeout time.Duration, login, password string, bd *measure.ConnectPhases, dialed *bool) (*Client, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	// timeoutErr maps a failure after the deadline to ErrTimeout, and a
	// failure after the parent's cancellation to the parent's error.
	timeoutErr := func(op string, err error) error {
		if perr := parent.Err(); perr != nil {
			return fmt.Errorf("imapclient: %s: %w", op, perr)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("imapclient: %s: %w after %v", op, measure.ErrTimeout, timeout)
		}
		return err
	}

	dial := cfg.DialContext
	if dial == nil {
		dial = sessionDialer.DialContext
	}
	raw, err := dial(ctx, "tcp", cfg.Address)
	if err != nil {
		return nil, timeoutErr("dial", fmt.Errorf("imapclient: dial: %w", err))
	}
	bd.TCP = time.Since(start)
	*dialed = true
	// A command's response is waited for before it is read (package
	// replywait).
	raw = replywait.Wrap(raw)
	// Every ACK of the connect goes out at once, so that no server's
	// writes wait on a delayed ACK of ours (package quickack).
	qa := quickack.Wrap(raw)
	defer qa.Done()
	raw = qa

	tlsConfig := func() *tls.Config {
		var tc *tls.Config
		if cfg.TLSConfig != nil {
			tc = cfg.TLSConfig.Clone()
		} else {
			tc = &tls.Config{}
		}
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(cfg.Address); err == nil {
				tc.ServerName = host
			}
		}
		if tc.NextProtos == nil {
			tc.NextProtos = []string{"imap"}
		}
		return tc
	}

	var conn net.Conn = raw
	var prefix []byte
	var serverGreeting string // the server's greeting when read before STARTTLS
	switch cfg.TLS {
	case TLSNone, "":
	case TLSImplicit:
		t0 := time.Now()
		tc := tls.Client(raw, tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, timeoutErr("TLS handshake", fmt.Errorf("imapclient: %w", &measure.TLSError{Op: "TLS handshake", Err: err}))
		}
		bd.TLS = time.Since(t0)
		bd.Handshake = bd.TLS
		bd.TLSUsed = true
		bd.Resumed = tc.ConnectionState().DidResume
		conn = tc
	case TLSStartTLS:
		t0 := time.Now()
		greeting, original, greetingAt, err := startTLSGreeting(ctx, raw)
		if err != nil {
			raw.Close()
			return nil, timeoutErr("STARTTLS", err)
		}
		bd.Greeting = greetingAt.Sub(t0)
		t1 := greetingAt
		th := time.Now()
		bd.ClearExchange = th.Sub(greetingAt) // STARTTLS and its OK
		tc := tls.Client(raw, tlsConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, timeoutErr("TLS handshake", fmt.Errorf("imapclient: %w", &measure.TLSError{Op: "TLS handshake", Err: err}))
		}
		bd.Handshake = time.Since(th)
		bd.TLS = time.Since(t1)
		bd.TLSUsed = true
		bd.Resumed = tc.ConnectionState().DidResume
		conn = tc
		prefix = greeting
		serverGreeting = original
	default:
		raw.Close()
		return nil, fmt.Errorf("imapclient: unknown TLS mode %q", cfg.TLS)
	}

	gt := newGreetingTap(conn, prefix)
	if serverGreeting != "" {
		// STARTTLS: go-imap is given a stand-in greeting, the disclosure
		// the server's own line, read before the handshake.
		gt.line, gt.done = []byte(serverGreeting+"\r\n"), true
	}
	tr := newTransport(gt, prefix)
	libOpts := &goimap.Options{
		MaxResponseBytes: bound(cfg.MaxResponseBytes, DefaultMaxResponseBytes),
		MaxLiteralBytes:  bound(cfg.MaxLiteralBytes, DefaultMaxLiteralBytes),
		// The waiter reads its responses: no goroutine hand-off per
		// response (issue 37; docs/performance.md).
		ReadInCaller: !cfg.Idles,
		// A session's FETCHes (20 envelopes and headers, 14 KiB from
		// Dovecot; a 4 KiB body) in one or two reads instead of four or
		// five; a client that idles keeps bufio's 4 KiB.
		ReadBufferSize: sessionReadBuffer(cfg.Idles),
		// A session's client (a new connection each session) takes its
		// buffers from a pool and gives them back at Close (Close is the
		// session goroutine's); an idling client's IDLE is read by a
		// goroutine of go-imap's, which keeps its own.
		PoolBuffers: poolBuffers && !cfg.Idles,
		// Every operation runs under guard's watchdog (Connect's under
		// its context): go-imap's own deadlines, two timer changes per
		// response, would only duplicate it.
		CallerDeadlines: true,
		// mailbench reads an envelope's subject and message id, never its
		// addresses (most of its allocations) or its date (a third of its
		// decoding: INTERNALDATE is the time mailbench uses).
		SkipEnvelopeAddresses: true,
		SkipEnvelopeDate:      true,
	}
	if u := cfg.Unilateral; u != nil {
		h := &goimap.UnilateralDataHandler{}
		if u.Exists != nil {
			h.Mailbox = func(d *goimap.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					u.Exists(*d.NumMessages)
				}
			}
		}
		h.Expunge = u.Expunge
		libOpts.UnilateralDataHandler = h
	}
	c := &Client{
		lib:      goimap.New(tr, libOpts),
		tr:       tr,
		greeting: gt,
		timeout:  timeout,
		observer: cfg.Observer,
	}
	c.readerRunning.Store(cfg.Idles)
	// The remaining phases run under the watchdog of ctx.
	var fired atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		fired.Store(true)
		tr.Conn.Close()
	})
	fail := func(op string, err error) (*Client, error) {
		stop()
		if fired.Load() {
			err = timeoutErr(op, err)
		} else {
			err = c.mapErr(op, err)
		}
		c.Close()
		return nil, err
	}

	t0 := time.Now()
	if err := c.lib.WaitGreeting(); err != nil {
		return fail("greeting", err)
	}
	if c.lib.State() != imap.ConnStateNotAuthenticated {
		return fail("greeting", &measure.ProtocolError{Op: "greeting", Reply: "PREAUTH is not supported"})
	}
	if c.lib.Caps() == nil {
		return fail("CAPABILITY", errors.New("no capability list"))
	}
	first := time.Since(t0)
	if cfg.TLS == TLSStartTLS {
		bd.TLS += first
	} else {
		bd.Greeting = first
	}
	if bd.TLSUsed {
		bd.FirstExchange = first
	}

	t0 = time.Now()
	switch strings.ToLower(cfg.Auth) {
	case AuthLogin, "":
		err = c.lib.Login(login, password).Wait()
	case AuthPlain:
		err = c.lib.Authenticate(sasl.NewPlainClient("", login, password))
	default:
		err = fmt.Errorf("imapclient: unknown auth mechanism %q", cfg.Auth)
	}
	if err != nil {
		cl, ferr := fail("LOGIN", err)
		return cl, measure.AsAuth(ferr) // a NO or BAD to the credentials: the auth class
	}
	// go-imap drops its capabilities after the OK (unless it carried
	// [CAPABILITY]) and then sends CAPABILITY. When the caller reads, it
	// has processed the OK (Wait returned after the whole response); its
	// reader goroutine may not have yet: wait until it has, so that Caps
	// sees the reset and waits for the new list.
	if c.readerRunning.Load() {
		select {
		case <-c.tr.readerIdle():
		case <-c.lib.Closed():
		}
	}
	if c.lib.Caps() == nil {
		return fail("CAPABILITY", errors.New("no capability list after login"))
	}
	bd.Auth = time.Since(t0)
	if !stop() {
		return fail("LOGIN", errors.New("deadline"))
	}
	c.breakdown = *bd
	return c, nil
}

// startTLSGreeting reads the greeting from raw, sends STARTTLS and waits for
// its OK, all in clear text and under ctx's deadline. It returns the
// greeting line to replay to go-imap (without its capability list, which
// is void after STARTTLS).
func startTLSGreeting(ctx context.Context, raw net.Conn) (greeting []byte, original string, greetingAt time.Time, err error) {
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	br := bufio.NewReaderSize(raw, 1024)
	readLine := func() (string, error) {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return "", &measure.ProtocolError{Op: "STARTTLS", Reply: "line too long"}
			}
			return "", fmt.Errorf("imapclient: STARTTLS: %w", err)
		}
		return strings.TrimRight(string(line), "\r\n"), nil
	}
	line, err := readLine()
	if err != nil {
		return nil, "", greetingAt, err
	}
	greetingAt = time.Now()
	typ, text := statusOf(strings.TrimPrefix(line, "* "))
	switch {
	case !strings.HasPrefix(line, "* "):
		return nil, "", greetingAt, &measure.ProtocolError{Op: "greeting", Reply: truncate(line)}
	case typ == "PREAUTH":
		return nil, "", greetingAt, &measure.ProtocolError{Op: "greeting", Reply: "PREAUTH refused before STARTTLS"}
	case typ != "OK":
		return nil, "", greetingAt, &measure.ProtocolError{Op: "greeting", Reply: truncate(typ + " " + text)}
	}
	const tag = "MBS1"
	if _, err := raw.Write([]byte(tag + " STARTTLS\r\n")); err != nil {
		return nil, "", greetingAt, fmt.Errorf("imapclient: STARTTLS: %w", err)
	}
	for {
		line, err := readLine()
		if err != nil {
			return nil, "", greetingAt, err
		}
		if !strings.HasPrefix(line, tag+" ") {
			continue // untagged data, e.g. a CAPABILITY reply
		}
		typ, text := statusOf(line[len(tag)+1:])
		if typ != "OK" {
			return nil, "", greetingAt, &measure.ProtocolError{Op: "STARTTLS", Reply: truncate(typ + " " + text)}
		}
		break
	}
	if br.Buffered() > 0 {
		// Clear-text bytes after the OK would be injected into the TLS session.
		return nil, "", greetingAt, &measure.ProtocolError{Op: "STARTTLS", Reply: "data after STARTTLS OK"}
	}
	raw.SetDeadline(time.Time{})
	return []byte("* OK [mailbench] greeting received before STARTTLS\r\n"), line, greetingAt, nil
}

// statusOf splits "OK [CODE] text" into the status word and the rest.
func statusOf(s string) (typ, rest string) {
	typ, rest, _ = strings.Cut(s, " ")
	return strings.ToUpper(typ), rest
}

// do runs one operation under the watchdog and, when fn is not empty,
// reports its Observation.
func (c *Client) do(ctx context.Context, fn measure.Function, op string, body func() error) error {
	if c.closed.Load() {
		return fmt.Errorf("imapclient: %s: %w", op, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("imapclient: %s: %w", op, err)
	}
	start := time.Now()
	c.untimed = 0
	err := c.guard(ctx, op, body)
	if fn != "" && c.observer != nil {
		o := observation(fn, start, err)
		o.Duration = max(o.Duration-c.untimed, 0) // the server's time, not mailbench's
		c.observer.Observe(o)
	}
	return err
}

const (
	guardRunning int32 = iota
	guardDone
	guardTimeout
	guardCancelled
)

// watchdog is guard's timer and context registration, reused by the
// commands of one client. A watchdog is reused only when its context
// callback cannot still run for an earlier command: its registration on the
// previous command's context (kept while the context stays the same) was
// stopped before the context ended.
//
// The timer is not reset per command. A command stores its deadline; the
// timer, armed once, fires at or before that deadline (an earlier command's
// deadline is never later than a later one's, the timeout being the same),
// finds the deadline still ahead and re-arms itself for what is left, or
// finds it passed and closes the connection. Resetting a runtime timer to
// an earlier time wakes a thread to watch the new time (runtime's
// wakeNetPoller): with a Reset and a Stop per command that was 72% of this
// client's futex wake-ups, each a second thread woken and put back to sleep
// (docs/performance.md, "Issue 37, sixth round").
type watchdog struct {
	state   atomic.Int32    // guardRunning while a command runs
	ctx     context.Context // the context stopCtx watches
	stopCtx func() bool
	expire  func() // closes the connection

	mu       sync.Mutex // orders start against fire
	timer    *time.Timer
	armed    bool      // timer will fire, at or before deadline
	deadline time.Time // the running command's
}

func (c *Client) newWatchdog() *watchdog {
	wd := &watchdog{expire: func() { c.tr.Conn.Close() }}
	wd.state.Store(guardDone)
	return wd
}

// start marks a command running until timeout from now and makes sure the
// timer will look at it in time.
func (wd *watchdog) start(timeout time.Duration) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	wd.deadline = time.Now().Add(timeout)
	wd.state.Store(guardRunning) // with the deadline, under mu: fire sees both or neither
	if wd.armed {
		return
	}
	wd.armed = true
	if wd.timer == nil {
		wd.timer = time.AfterFunc(timeout, wd.fire)
	} else {
		wd.timer.Reset(timeout)
	}
}

// fire is the timer's callback.
func (wd *watchdog) fire() {
	wd.mu.Lock()
	if wd.state.Load() == guardRunning {
		if left := time.Until(wd.deadline); left > 0 {
			wd.timer.Reset(left) // a later command's deadline: look again then
			wd.mu.Unlock()
			return
		}
	}
	wd.armed = false
	expired := wd.state.CompareAndSwap(guardRunning, guardTimeout)
	wd.mu.Unlock()
	if expired {
		wd.expire()
	}
}

// release stops both callbacks for good.
func (wd *watchdog) release() {
	wd.mu.Lock()
	if wd.timer != nil {
		wd.timer.Stop()
	}
	wd.armed = false
	wd.mu.Unlock()
	if wd.stopCtx != nil {
		wd.stopCtx()
	}
}

// guard runs body; if the timeout elapses or ctx is done first, it closes
// the connection (which makes body return) and reports that instead.
func (c *Client) guard(ctx context.Context, op string, body func() error) error {
	wd := c.wd.Swap(nil)
	if wd != nil && wd.ctx != ctx && !wd.stopCtx() {
		// The earlier context ended: its callback may still be on its way.
		wd.release()
		wd = nil
	}
	if wd == nil {
		wd = c.newWatchdog()
	}
	if wd.ctx != ctx {
		wd.ctx = ctx
		wd.stopCtx = context.AfterFunc(ctx, func() {
			if wd.state.CompareAndSwap(guardRunning, guardCancelled) {
				wd.expire()
			}
		})
	}
	wd.start(c.timeout)
	// A context that ended before the command was running found the
	// watchdog idle (or ended earlier): act for it.
	if ctx.Err() != nil && wd.state.CompareAndSwap(guardRunning, guardCancelled) {
		wd.expire()
	}
	err := body()
	if wd.state.CompareAndSwap(guardRunning, guardDone) {
		c.wd.Store(wd)
		if c.closed.Load() { // Close ran meanwhile and found no watchdog
			if wd := c.wd.Swap(nil); wd != nil {
				wd.release()
			}
		}
		return c.mapErr(op, err)
	}
	wd.release()
	c.Close()
	if wd.state.Load() == guardTimeout {
		return fmt.Errorf("imapclient: %s: %w after %v", op, measure.ErrTimeout, c.timeout)
	}
	return fmt.Errorf("imapclient: %s: %w", op, context.Cause(ctx))
}

// mapErr turns a go-imap error into one that measure.Classify understands:
// NO/BAD replies become *measure.ProtocolError, failures after an I/O error
// wrap that error (a connection failure), other failures are unexpected
// replies (protocol errors).
func (c *Client) mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ie *imap.Error
	if errors.As(err, &ie) {
		reply := string(ie.Type)
		if ie.Code != "" {
			reply += " [" + string(ie.Code) + "]"
		}
		if ie.Text != "" {
			reply += " " + ie.Text
		}
		return fmt.Errorf("imapclient: %w", &measure.ProtocolError{Op: op, Reply: truncate(reply)})
	}
	var pe *measure.ProtocolError
	if errors.As(err, &pe) {
		return err
	}
	if ioErr := c.tr.err(); ioErr != nil {
		c.Close()
		return fmt.Errorf("imapclient: %s: connection lost: %w", op, ioErr)
	}
	if errors.Is(err, ErrClosed) || measure.Classify(err) != measure.Other {
		return err
	}
	// The connection is alive but go-imap gave up: a malformed or
	// unexpected response. go-imap closes the connection in that case.
	c.Close()
	return fmt.Errorf("imapclient: %w", &measure.ProtocolError{Op: op, Reply: truncate("unexpected response: " + err.Error())})
}

func observation(fn measure.Function, start time.Time, err error) measure.Observation {
	return measure.Observation{
		Function: fn,
		Start:    start,
		Duration: time.Since(start),
		Class:    measure.Classify(err),
		Err:      err,
	}
}

// secretsOf lists what must never appear in an error (measure.Secrets).
func secretsOf(login, password string) []string { return measure.Secrets(login, password) }

// redact is measure.Redact with the clients' one mask.
func redact(err error, secrets ...string) error {
	return measure.Redact(err, measure.RedactedMask, secrets...)
}

// sessionDialer dials without TCP keep-alive probes. A benchmark session
// is short and every operation has its own deadline, so probes would never
// fire; enabling them costs four setsockopt calls per connection (Go's
// default for net.Dialer) for nothing.
var sessionDialer = net.Dialer{KeepAlive: -1}
