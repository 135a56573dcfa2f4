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

func (r *relayer) work() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case job := <-r.queue:
			r.process(job)
			r.pending.Add(-1)
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
// attempts; recipients refused permanently (5xx) are not retried.
func (r *relayer) process(job *relayJob) {
	rcpts := job.rcpts
	for attempt := 1; ; attempt++ {
		accepted, permanent, temporary := r.attempt(job.from, rcpts, job.msg)
		r.relayed.Add(int64(accepted))
		r.failed.Add(int64(permanent))
		if len(temporary) == 0 {
			return
		}
		if attempt >= r.attempts {
			r.failed.Add(int64(len(temporary)))
			return
		}
		timer := time.NewTimer(time.Duration(attempt) * r.retryDelay)
		select {
		case <-r.ctx.Done():
			timer.Stop()
			r.failed.Add(int64(len(temporary)))
			return
		case <-timer.C:
		}
		rcpts = temporary
	}
}

// attempt runs one SMTP transaction with the relay address. It returns how
// many recipients were accepted and permanently refused, and the recipients
// to try again. Every dial and command is bounded by r.timeout, and
// cancelling r.ctx closes the connection.
func (r *relayer) attempt(from string, rcpts []string, msg []byte) (accepted, permanent int, temporary []string) {
	all := func(err error) (int, int, []string) {
		if isPermanent(err) {
			return 0, len(rcpts), nil
		}
		return 0, 0, rcpts
	}
	c, release, err := r.open()
	if err != nil {
		return all(err)
	}
	defer c.Close()
	defer release()
	if err := c.Mail(from, nil); err != nil {
		return all(err)
	}
	var ok []string
	for i, rcpt := range rcpts {
		err := c.Rcpt(rcpt, nil)
		switch {
		case err == nil:
			ok = append(ok, rcpt)
		case isPermanent(err):
			permanent++
		case isSMTPError(err):
			temporary = append(temporary, rcpt)
		default: // the connection broke: retry the rest, and those accepted so far
			return 0, permanent, append(append(ok, temporary...), rcpts[i:]...)
		}
	}
	if len(ok) == 0 {
		c.Quit()
		return 0, permanent, temporary
	}
	// From here on a failure applies to every accepted recipient.
	fail := func(err error) (int, int, []string) {
		if isPermanent(err) {
			return 0, permanent + len(ok), temporary
		}
		return 0, permanent, append(temporary, ok...)
	}
	w, err := c.Data()
	if err != nil {
		return fail(err)
	}
	if _, err := w.Write(msg); err != nil {
		w.Close()
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	c.Quit() // the message is accepted whatever QUIT answers
	return len(ok), permanent, temporary
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
