package demo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/internal/gosmtp"
)

// RelayTLSMode says how the relay client secures its connections.
type RelayTLSMode int

const (
	// RelayOpportunisticTLS upgrades with STARTTLS when the relay host
	// advertises it and speaks plaintext otherwise, as an MTA does
	// (Postfix's smtp_tls_security_level = may). A failed handshake fails
	// the attempt; it is retried like a temporary refusal.
	RelayOpportunisticTLS RelayTLSMode = iota
	// RelayNoTLS always speaks plaintext.
	RelayNoTLS
	// RelayImplicitTLS speaks TLS from the first byte (SMTPS).
	RelayImplicitTLS
)

func (m RelayTLSMode) String() string {
	switch m {
	case RelayOpportunisticTLS:
		return "opportunistic STARTTLS"
	case RelayNoTLS:
		return "none"
	case RelayImplicitTLS:
		return "implicit"
	}
	return fmt.Sprintf("RelayTLSMode(%d)", int(m))
}

// relayJob is one accepted message still owed to some remote recipients.
type relayJob struct {
	from  string
	rcpts []string
	msg   []byte
}

// relayer delivers remote mail to one address from a bounded in-memory
// queue, like an MTA's outgoing queue: accept first, deliver later. Its
// methods are safe for concurrent use.
type relayer struct {
	addr       string
	heloName   string
	timeout    time.Duration
	attempts   int
	retryDelay time.Duration
	tlsMode    RelayTLSMode
	tlsConfig  *tls.Config // ServerName filled in; never nil
	dialFunc   func(ctx context.Context, network, address string) (net.Conn, error)

	offersSTARTTLS atomic.Bool // the relay host's last EHLO advertised STARTTLS
	relayed        *atomic.Int64
	failed         *atomic.Int64

	queue   chan *relayJob
	pending atomic.Int64 // jobs enqueued and not finished

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newRelayer(t *Target, o Options) *relayer {
	ctx, cancel := context.WithCancel(context.Background())
	r := &relayer{
		addr:       o.RelayAddr,
		heloName:   o.LocalDomain,
		timeout:    o.OpTimeout,
		attempts:   o.RelayAttempts,
		retryDelay: o.RelayRetryDelay,
		tlsMode:    o.RelayTLS,
		tlsConfig:  relayClientTLS(o.RelayTLSConfig, o.RelayAddr),
		relayed:    &t.counters.relayed,
		failed:     &t.counters.relayFailed,
		queue:      make(chan *relayJob, o.RelayQueueSize),
		ctx:        ctx,
		cancel:     cancel,
		dialFunc:   o.RelayDial,
	}
	r.wg.Add(o.RelayWorkers)
	for range o.RelayWorkers {
		go r.work()
	}
	return r
}

// tryEnqueue queues job without blocking and reports whether there was room.
func (r *relayer) tryEnqueue(job *relayJob) bool {
	if r.ctx.Err() != nil {
		return false
	}
	r.pending.Add(1)
	select {
	case r.queue <- job:
		return true
	default:
		r.pending.Add(-1)
		return false
	}
}

// The connection cache, as Postfix's (smtp_connection_cache_on_demand): a
// worker keeps its connection to the relay host after a transaction and
// sends the next message over it, as long as the next message comes
// within relayCacheIdle (smtp_connection_cache_time_limit, 2 s) and the
// connection is younger than relayReuseLimit
// (smtp_connection_reuse_time_limit, 300 s). A connection per message
// cost a busy target seven round trips per message instead of four
// (connect, banner, EHLO and QUIT besides MAIL, RCPT, DATA and the
// message), and with it the relay fell behind at 5,000,000
// sessions/hour: "Relay queue full" counted as the server's errors.
const (
	relayCacheIdle  = 2 * time.Second
	relayReuseLimit = 300 * time.Second
)

// relayConn is an open, greeted connection to the relay host.
type relayConn struct {
	c       *smtp.Client
	release func() // stops closing it when the relayer is cancelled
	opened  time.Time
}

// close sends QUIT when quit (bounded by the client's CommandTimeout) and
// closes the connection.
func (rc *relayConn) close(quit bool) {
	if quit {
		rc.c.Quit()
	}
	rc.release()
	rc.c.Close()
}

func (r *relayer) work() {
	defer r.wg.Done()
	var cached *relayConn
	idle := time.NewTimer(relayCacheIdle)
	idle.Stop()
	defer func() {
		idle.Stop()
		if cached != nil {
			cached.close(false) // cancelled: no QUIT
		}
	}()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-idle.C:
			if cached != nil {
				cached.close(true)
				cached = nil
			}
		case job := <-r.queue:
			idle.Stop()
			cached = r.process(job, cached)
			r.pending.Add(-1)
			if cached != nil {
				idle.Reset(relayCacheIdle)
			}
		}
	}
}

// stop cancels the workers (interrupting connections in flight), waits for
// them at most wait, and counts every recipient still queued as failed.
func (r *relayer) stop(wait time.Duration) error {
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		return fmt.Errorf("target: relay workers did not stop within %v", wait)
	}
	for {
		select {
		case job := <-r.queue:
			r.failed.Add(int64(len(job.rcpts)))
			r.pending.Add(-1)
		default:
			return nil
		}
	}
}

// process tries job's recipients up to r.attempts times, pausing between
// attempts; recipients refused permanently (5xx) are not retried. It
// starts with cached when not nil, and returns the connection to keep for
// the next message, if any.
func (r *relayer) process(job *relayJob, cached *relayConn) *relayConn {
	rcpts := job.rcpts
	for attempt := 1; ; attempt++ {
		accepted, permanent, temporary, keep := r.attempt(job.from, rcpts, job.msg, cached)
		cached = keep
		r.relayed.Add(int64(accepted))
		r.failed.Add(int64(permanent))
		if len(temporary) == 0 {
			return cached
		}
		if attempt >= r.attempts {
			r.failed.Add(int64(len(temporary)))
			return cached
		}
		timer := time.NewTimer(time.Duration(attempt) * r.retryDelay)
		select {
		case <-r.ctx.Done():
			timer.Stop()
			r.failed.Add(int64(len(temporary)))
			return cached
		case <-timer.C:
		}
		rcpts = temporary
	}
}

// attempt runs one SMTP transaction with the relay address, over cached
// when not nil (and not too old), else over a new connection. It returns
// how many recipients were accepted and permanently refused, the
// recipients to try again, and the connection to keep when the
// transaction ended with the connection in a known state (its DATA
// answered). Every dial and command is bounded by r.timeout, and
// cancelling r.ctx closes the connection. A cached connection that the
// relay host has closed meanwhile (an I/O error or a 421 before any
// recipient is accepted) is replaced by a new one within the same
// attempt: that is not the message's failure.
//
// MAIL, the RCPTs and DATA go out in one write when the relay host
// advertises PIPELINING, as Postfix's smtp client sends them: two round
// trips per message instead of three plus one per recipient, which is
// what bounds a relay's throughput when both ends are busy.
func (r *relayer) attempt(from string, rcpts []string, msg []byte, cached *relayConn) (accepted, permanent int, temporary []string, keep *relayConn) {
	if cached != nil && time.Since(cached.opened) > relayReuseLimit {
		cached.close(true)
		cached = nil
	}
	rc := cached
	var (
		rcptErrs []error
		w        *smtp.DataCommand
		err      error
	)
	if rc != nil {
		rcptErrs, w, err = rc.c.MailRcptData(from, nil, rcpts, nil)
		if broken(err) || isClosing(err) && !anyAccepted(rcptErrs) {
			rc.close(false)
			rc = nil // closed by the host while idle: open another
		}
	}
	if rc == nil {
		c, release, err2 := r.open()
		if err2 != nil {
			return allFailed(err2, rcpts)
		}
		rc = &relayConn{c: c, release: release, opened: time.Now()}
		rcptErrs, w, err = c.MailRcptData(from, nil, rcpts, nil)
	}
	if broken(err) {
		// The connection broke: every recipient is tried again.
		rc.close(false)
		return 0, 0, rcpts, nil
	}
	var ok []string
	for i, rcpt := range rcpts {
		switch e := rcptErrs[i]; {
		case e == nil:
			ok = append(ok, rcpt)
		case isPermanent(e):
			permanent++
		default:
			temporary = append(temporary, rcpt)
		}
	}
	// From here on a failure applies to every accepted recipient.
	fail := func(err error) (int, int, []string, *relayConn) {
		if isPermanent(err) {
			return 0, permanent + len(ok), temporary, nil
		}
		return 0, permanent, append(temporary, ok...), nil
	}
	if err != nil {
		// No recipient accepted, or MAIL or DATA refused: the
		// transaction may be left open on the host's side, so the
		// connection is not reused.
		rc.close(!isClosing(err))
		if len(ok) == 0 && !errors.Is(err, smtp.ErrNoRecipient) {
			return allFailed(err, rcpts) // MAIL refused: every recipient
		}
		return fail(err)
	}
	if _, err := w.Write(msg); err != nil {
		w.Close()
		rc.close(false)
		return fail(err)
	}
	if err := w.Close(); err != nil {
		a, p, t, _ := fail(err)
		if isSMTPError(err) && !isClosing(err) {
			return a, p, t, rc // the transaction is over and the connection fine
		}
		rc.close(false)
		return a, p, t, nil
	}
	return len(ok), permanent, temporary, rc
}

// allFailed is attempt's result when err applies to every recipient: all
// refused permanently for a 5xx reply, else all to be tried again.
func allFailed(err error, rcpts []string) (int, int, []string, *relayConn) {
	if isPermanent(err) {
		return 0, len(rcpts), nil, nil
	}
	return 0, 0, rcpts, nil
}

// broken reports whether err, from MailRcptData, leaves the connection in
// an unknown state: neither the host's reply nor "no recipient accepted".
func broken(err error) bool {
	return err != nil && !isSMTPError(err) && !errors.Is(err, smtp.ErrNoRecipient)
}

// anyAccepted reports whether a recipient of MailRcptData was accepted.
func anyAccepted(rcptErrs []error) bool {
	for _, e := range rcptErrs {
		if e == nil {
			return true
		}
	}
	return false
}

// isClosing reports whether err is a 421 reply: the server is closing the
// connection.
func isClosing(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code == 421
}

// open connects to the relay host, secures the connection as r.tlsMode
// says and greets it with EHLO. Every step is bounded by r.timeout, and
// cancelling r.ctx closes the connection until release is called; the
// caller calls release and then closes c.
func (r *relayer) open() (c *smtp.Client, release func(), err error) {
	if r.tlsMode == RelayOpportunisticTLS && r.offersSTARTTLS.Load() {
		return r.openSTARTTLS()
	}
	raw, release, err := r.dial()
	if err != nil {
		return nil, nil, err
	}
	var conn net.Conn = raw
	if r.tlsMode == RelayImplicitTLS {
		tc := tls.Client(raw, r.tlsConfig)
		ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			release()
			raw.Close()
			return nil, nil, fmt.Errorf("target: relay TLS handshake: %w", err)
		}
		conn = tc
	}
	c = smtp.NewClient(conn)
	c.CommandTimeout = r.timeout
	c.SubmissionTimeout = r.timeout
	if err := c.Hello(r.heloName); err != nil {
		release()
		c.Close()
		return nil, nil, err
	}
	if r.tlsMode == RelayOpportunisticTLS {
		if offered, _ := c.Extension("STARTTLS"); offered {
			// go-smtp upgrades only a client that has not greeted yet
			// (NewClientStartTLS): leave this connection and open a
			// secure one. The host's answer is remembered, so this costs
			// one extra connection the first time only.
			r.offersSTARTTLS.Store(true)
			c.Quit()
			release()
			c.Close()
			return r.openSTARTTLS()
		}
	}
	return c, release, nil
}

// openSTARTTLS opens a connection upgraded with STARTTLS. When the host no
// longer offers STARTTLS, this attempt fails and the next one is made in
// plaintext (opportunistically).
func (r *relayer) openSTARTTLS() (*smtp.Client, func(), error) {
	raw, release, err := r.dial()
	if err != nil {
		return nil, nil, err
	}
	// NewClientStartTLS reads the banner and sends EHLO and STARTTLS with
	// go-smtp's default timeouts (minutes): bound them together.
	watchdog := time.AfterFunc(r.timeout, func() { raw.Close() })
	c, err := smtp.NewClientStartTLS(raw, r.tlsConfig)
	watchdog.Stop()
	if err != nil {
		release()
		raw.Close()
		if err.Error() == errNoSTARTTLS {
			r.offersSTARTTLS.Store(false)
		}
		return nil, nil, fmt.Errorf("target: relay STARTTLS: %w", err)
	}
	c.CommandTimeout = r.timeout
	c.SubmissionTimeout = r.timeout
	// The handshake runs with this EHLO, under CommandTimeout.
	if err := c.Hello(r.heloName); err != nil {
		release()
		c.Close()
		return nil, nil, fmt.Errorf("target: relay STARTTLS: %w", err)
	}
	return c, release, nil
}

// errNoSTARTTLS is go-smtp's (v0.25) error text for a server whose EHLO
// lacks STARTTLS.
const errNoSTARTTLS = "smtp: server doesn't support STARTTLS"

// dial connects to the relay host within r.timeout; until release is
// called, cancelling r.ctx closes the connection.
func (r *relayer) dial() (net.Conn, func(), error) {
	dial := r.dialFunc
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	dctx, cancel := r.ctx, context.CancelFunc(func() {})
	if r.timeout > 0 {
		dctx, cancel = context.WithTimeout(r.ctx, r.timeout)
	}
	conn, err := dial(dctx, "tcp", r.addr)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(r.ctx, func() { conn.Close() })
	return conn, func() { stop() }, nil
}

// relayClientTLS returns the relay client's TLS configuration: a clone of
// given, or an unverifying one (opportunistic TLS) when given is nil, with
// ServerName defaulting to the host of addr.
func relayClientTLS(given *tls.Config, addr string) *tls.Config {
	var cfg *tls.Config
	if given != nil {
		cfg = given.Clone()
	} else {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	}
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg
}

func isSMTPError(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se)
}

// isPermanent reports whether err is an SMTP 5xx reply.
func isPermanent(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code >= 500 && se.Code < 600
}
