package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"
	"github.com/mailbench/mailbench/internal/gosmtp"
	"github.com/mailbench/mailbench/internal/lib/heapwarm"
	"github.com/mailbench/mailbench/workload"
)

// Defaults applied by Start to zero Options fields.
const (
	DefaultAddr           = "127.0.0.1:0"
	DefaultLocalDomain    = "example.test"
	DefaultOpTimeout      = 30 * time.Second
	DefaultRelayQueueSize = 1000
	// DefaultRelayWorkers is Postfix's default_destination_concurrency_limit:
	// with 4 (until 0.3) the relay, not the server's CPU, capped a busy
	// demo target at ~26 messages/s to the sink (bench/rate at 5,000,000
	// sessions/hour: the queue full, 451s counted as the target's errors).
	DefaultRelayWorkers  = 20
	DefaultRelayAttempts = 3
	// DefaultTLSHandshakeTimeout bounds the handshake on an implicit-TLS
	// listener.
	DefaultTLSHandshakeTimeout = 10 * time.Second
)

// The mailboxes every user has besides Options.Folders, in creation order.
var standardMailboxes = []string{"INBOX", "Sent", "Drafts", "Trash"}

const (
	// serverTimeout bounds every read and write of the target's own SMTP
	// server (go-smtp answers an idle client with 421); imapserver applies
	// its own fixed timeouts (30 s per command, 35 min idle when logged in).
	serverTimeout = 5 * time.Minute
	// maxMessageBytes is the SMTP SIZE limit.
	maxMessageBytes = 64 << 20
	// maxRecipients is the SMTP recipient limit per transaction.
	maxRecipients = 100
	// closeWait bounds how long Close waits for the relay workers.
	closeWait = 5 * time.Second
)

// Faults injects misbehaviour into local delivery, so that the benchmark's
// delivery accounting can be tested. Faults count local deliveries (one per
// local recipient of an accepted message) in one sequence n = 1, 2, …;
// each fault whose period divides n applies to delivery n. Zero disables a
// fault. The IMAP stall is controlled at run time with Target.StallIMAP.
type Faults struct {
	DropEvery      int // accept but silently discard delivery n
	DuplicateEvery int // deliver n twice
	CorruptEvery   int // flip one byte of n's body (after the header)
	// DeliveryDelay, when positive, delays every local delivery: the
	// message is answered 250 at once and appended to the INBOX D later
	// (with its INTERNALDATE then), as a server with a slow local
	// delivery agent would. DelayEvery, when positive, applies the delay
	// to every Nth local delivery only. Deliveries still waiting at Close
	// are discarded.
	DeliveryDelay time.Duration
	DelayEvery    int
}

// Options configures Start. Only Users is required.
type Options struct {
	// Listen, if set, replaces net.ListenConfig.Listen for both listeners,
	// and RelayDial net.Dialer.DialContext for the relay (an in-memory
	// network in tests).
	Listen    func(ctx context.Context, network, address string) (net.Listener, error)
	RelayDial func(ctx context.Context, network, address string) (net.Conn, error)

	Users       []workload.User
	LocalDomain string   // default DefaultLocalDomain
	Folders     []string // besides INBOX, Sent, Drafts, Trash; "/" separates levels

	// Populate, when not nil, is called once per user × mailbox during
	// Start, sequentially from Start's goroutine, to fill the mailbox: add
	// appends msg (CRLF line endings) with internal date t. Mailboxes are
	// visited in the order INBOX, Sent, Drafts, Trash, Folders, users in
	// Users order. An error aborts Start.
	Populate func(user workload.User, mailbox string, add func(msg []byte, t time.Time) error) error

	// RelayAddr is where mail for other domains is relayed (the mailbench
	// sink). "" rejects non-local recipients with 550 5.7.1.
	RelayAddr string
	// TLSConfig, when not nil, enables TLS on both servers: STARTTLS, or
	// implicit TLS on the listeners that IMAPImplicitTLS and
	// SMTPImplicitTLS select.
	TLSConfig *tls.Config
	// IMAPImplicitTLS and SMTPImplicitTLS make that server's listener a TLS
	// listener (IMAPS, SMTPS): the TLS handshake comes first, and STARTTLS
	// is not offered there. Each needs TLSConfig. The two are independent:
	// IMAP may be implicit while SMTP offers STARTTLS.
	IMAPImplicitTLS, SMTPImplicitTLS bool
	// TLSHandshakeTimeout bounds the handshake on an implicit-TLS listener,
	// counted from the accept; a client that has not completed it by then
	// (a plaintext client waiting for a greeting, say) is disconnected.
	// Default DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration
	// IMAPAddr and SMTPAddr are the listen addresses, default DefaultAddr.
	IMAPAddr, SMTPAddr string
	// OpTimeout bounds each relay dial and SMTP command, default 30 s.
	OpTimeout time.Duration
	// RelayQueueSize bounds the messages waiting to be relayed (default
	// 1000); when the queue is full a message with remote recipients gets
	// 451 4.3.0. RelayWorkers deliver from it concurrently (default 20).
	// RelayAttempts is how often a recipient is tried before it is given
	// up on (default 3; permanent 5xx refusals are not retried).
	RelayQueueSize, RelayWorkers, RelayAttempts int
	// RelayRetryDelay is the pause before the second attempt, growing
	// linearly after it; default 250 ms.
	RelayRetryDelay time.Duration
	// RelayTLS says how the relay client secures its connections to
	// RelayAddr; the default, RelayOpportunisticTLS, uses STARTTLS when the
	// relay host offers it. RelayTLSConfig is the relay client's TLS
	// configuration; nil encrypts without verifying the certificate, as
	// MTAs do for opportunistic TLS (see tlsconf.PinnedClientTLS for a strict one).
	// Its ServerName defaults to the host of RelayAddr.
	RelayTLS       RelayTLSMode
	RelayTLSConfig *tls.Config

	Faults Faults

	// Latency adds a fixed delay before the target handles a command, keyed
	// by LatencyCommands ("SELECT", "UID FETCH", "DATA", …): a server of
	// known response time, so that tests can check what mailbench measures.
	Latency map[string]time.Duration
	// Contention makes every command with a latency knob wait longer the
	// more sessions are active beyond a knee: a server of known capacity
	// (see Contention). The zero value is off.
	Contention Contention

	// ErrorLog receives the servers' internal error messages; nil discards
	// them. Messages never contain passwords.
	ErrorLog *log.Logger
}

// Stats are the target's counters since Start. Counts are per recipient
// unless noted.
type Stats struct {
	Delivered   int64 // local deliveries appended to an INBOX (corrupted ones included, duplicates not)
	Relayed     int64 // remote recipients the relay accepted
	RelayFailed int64 // remote recipients given up on (refused, retries exhausted, or unsent at Close)
	Rejected    int64 // RCPT refused: unknown local user, or relaying denied
	Deferred    int64 // messages answered 451 because the relay queue was full
	Dropped     int64 // local deliveries discarded by Faults.DropEvery
	Duplicated  int64 // extra copies delivered by Faults.DuplicateEvery
	Corrupted   int64 // local deliveries altered by Faults.CorruptEvery
	Delayed     int64 // local deliveries held back by Faults.DeliveryDelay
	// PeakActive is the most sessions that were active at once (as
	// Contention counts them); Contended the commands that waited for
	// Options.Contention.
	PeakActive, Contended int64
	Queue                 int // messages accepted for relay and not yet finished
}

// Target is a running embedded IMAP + SMTP server. Its methods are safe for
// concurrent use.
type Target struct {
	opts Options

	byLogin   map[string]*account // immutable after Start
	byAddress map[string]*account // key: lower-cased address; immutable after Start

	gate   stallGate
	imapLn net.Listener
	// imapStall is the stall gate's listener under imapLn: it closes the
	// connections the IMAP server had not registered yet.
	imapStall *stallListener
	imapSrv   *imapserver.Server
	smtpLn    net.Listener
	smtpSrv   *smtp.Server
	relay     *relayer // nil when RelayAddr is ""
	serveWG   sync.WaitGroup

	localSeq atomic.Int64
	act      activity       // active sessions, for Options.Contention
	delayed  sync.WaitGroup // delayed local deliveries in flight
	delay    atomic.Int64   // SetDeliveryDelay's delay (ns); 0: Faults.DeliveryDelay
	closing  chan struct{}  // closed by Close: delayed deliveries are discarded
	counters struct {
		delivered, relayed, relayFailed, rejected, deferred,
		dropped, duplicated, corrupted, delayed atomic.Int64
	}

	closeOnce sync.Once
	closeErr  error
}

// account is a User with its in-memory mailboxes.
type account struct {
	workload.User
	mem *imapmemserver.User
}

// Start validates opts, creates and populates the users' mailboxes, and
// starts the IMAP and SMTP servers and the relay workers. ctx bounds
// start-up only (population in particular); the target runs until Close.
func Start(ctx context.Context, opts Options) (*Target, error) {
	if err := normalize(&opts); err != nil {
		return nil, err
	}
	t := &Target{
		opts:      opts,
		byLogin:   make(map[string]*account, len(opts.Users)),
		byAddress: make(map[string]*account, len(opts.Users)),
		closing:   make(chan struct{}),
	}
	if err := t.createAccounts(ctx); err != nil {
		return nil, err
	}
	// The mailboxes are most of a populated target's heap; the pages the
	// heap grows into next are touched now, not while the run is measured
	// (package heapwarm).
	if opts.Populate != nil {
		heapwarm.Warm()
	}

	listen := opts.Listen
	if listen == nil {
		var lc net.ListenConfig
		listen = lc.Listen
	}
	imapLn, err := listen(ctx, "tcp", opts.IMAPAddr)
	if err != nil {
		return nil, fmt.Errorf("target: IMAP listen: %w", err)
	}
	smtpLn, err := listen(ctx, "tcp", opts.SMTPAddr)
	if err != nil {
		imapLn.Close()
		return nil, fmt.Errorf("target: SMTP listen: %w", err)
	}
	t.imapStall = &stallListener{Listener: imapLn, gate: &t.gate}
	t.imapLn = t.imapStall
	t.smtpLn = smtpLn
	// STARTTLS is offered where the listener is not already a TLS one.
	imapSTARTTLS, smtpSTARTTLS := opts.TLSConfig, opts.TLSConfig
	if opts.IMAPImplicitTLS {
		t.imapLn = newImplicitTLSListener(t.imapLn, opts.TLSConfig, opts.TLSHandshakeTimeout)
		imapSTARTTLS = nil
	}
	if opts.SMTPImplicitTLS {
		t.smtpLn = newImplicitTLSListener(t.smtpLn, opts.TLSConfig, opts.TLSHandshakeTimeout)
		smtpSTARTTLS = nil
	}

	logger := opts.ErrorLog
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	t.imapSrv = imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &imapSession{t: t, done: t.act.begin()}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}, imap.CapIdle: {}},
		Logger:       logger,
		TLSConfig:    imapSTARTTLS,
		InsecureAuth: true,
	})

	t.smtpSrv = smtp.NewServer(smtpBackend{t})
	t.smtpSrv.Domain = opts.LocalDomain
	t.smtpSrv.ReadTimeout = serverTimeout
	t.smtpSrv.WriteTimeout = serverTimeout
	t.smtpSrv.MaxMessageBytes = maxMessageBytes
	t.smtpSrv.MaxRecipients = maxRecipients
	t.smtpSrv.AllowInsecureAuth = true
	t.smtpSrv.TLSConfig = smtpSTARTTLS
	t.smtpSrv.ErrorLog = logger

	if opts.RelayAddr != "" {
		t.relay = newRelayer(t, opts)
	}

	t.serveWG.Add(2)
	go func() {
		defer t.serveWG.Done()
		if err := t.imapSrv.Serve(t.imapLn); err != nil && !errors.Is(err, net.ErrClosed) {
			logger.Printf("target: IMAP serve: %v", err)
		}
	}()
	go func() {
		defer t.serveWG.Done()
		if err := t.smtpSrv.Serve(t.smtpLn); err != nil && !errors.Is(err, net.ErrClosed) {
			logger.Printf("target: SMTP serve: %v", err)
		}
	}()
	return t, nil
}

// normalize fills defaults and validates opts in place.
func normalize(o *Options) error {
	if len(o.Users) == 0 {
		return errors.New("target: no users")
	}
	if o.LocalDomain == "" {
		o.LocalDomain = DefaultLocalDomain
	}
	if strings.ContainsAny(o.LocalDomain, "@ \t\r\n") {
		return fmt.Errorf("target: invalid local domain %q", o.LocalDomain)
	}
	if o.IMAPAddr == "" {
		o.IMAPAddr = DefaultAddr
	}
	if o.SMTPAddr == "" {
		o.SMTPAddr = DefaultAddr
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.RelayQueueSize <= 0 {
		o.RelayQueueSize = DefaultRelayQueueSize
	}
	if o.RelayWorkers <= 0 {
		o.RelayWorkers = DefaultRelayWorkers
	}
	if o.RelayAttempts <= 0 {
		o.RelayAttempts = DefaultRelayAttempts
	}
	if o.RelayRetryDelay <= 0 {
		o.RelayRetryDelay = 250 * time.Millisecond
	}
	if (o.IMAPImplicitTLS || o.SMTPImplicitTLS) && o.TLSConfig == nil {
		return errors.New("target: implicit TLS needs a TLSConfig")
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = DefaultTLSHandshakeTimeout
	}
	switch o.RelayTLS {
	case RelayOpportunisticTLS, RelayNoTLS, RelayImplicitTLS:
	default:
		return fmt.Errorf("target: unknown RelayTLS mode %d", o.RelayTLS)
	}
	if o.Faults.DropEvery < 0 || o.Faults.DuplicateEvery < 0 || o.Faults.CorruptEvery < 0 ||
		o.Faults.DelayEvery < 0 || o.Faults.DeliveryDelay < 0 {
		return errors.New("target: negative fault period")
	}
	if err := checkLatency(o); err != nil {
		return err
	}
	if err := o.Contention.check(); err != nil {
		return err
	}

	users := make([]workload.User, len(o.Users))
	for i, u := range o.Users {
		if u.Login == "" || strings.ContainsAny(u.Login, " \t\r\n\"") {
			return fmt.Errorf("target: user %d: invalid login %q", i+1, u.Login)
		}
		if u.Address == "" {
			u.Address = u.Login
			if !strings.Contains(u.Login, "@") {
				u.Address = u.Login + "@" + o.LocalDomain
			}
		}
		local, domain, ok := splitAddress(u.Address)
		if !ok || local == "" || !strings.EqualFold(domain, o.LocalDomain) {
			return fmt.Errorf("target: user %q: address %q is not in local domain %q", u.Login, u.Address, o.LocalDomain)
		}
		users[i] = u
	}
	o.Users = users

	seen := make(map[string]bool)
	for _, m := range standardMailboxes {
		seen[m] = true
	}
	folders := make([]string, 0, len(o.Folders))
	for _, f := range o.Folders {
		if f == "" || strings.HasPrefix(f, "/") || strings.HasSuffix(f, "/") ||
			strings.Contains(f, "//") || strings.ContainsAny(f, "\r\n%*") {
			return fmt.Errorf("target: invalid folder name %q", f)
		}
		key := strings.ToUpper(f)
		if key != "INBOX" && !strings.HasPrefix(key, "INBOX/") {
			key = f // only INBOX is case-insensitive
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		folders = append(folders, f)
	}
	o.Folders = folders
	return nil
}

// splitAddress splits local@domain at the last '@'.
func splitAddress(addr string) (local, domain string, ok bool) {
	i := strings.LastIndexByte(addr, '@')
	if i < 0 {
		return "", "", false
	}
	return addr[:i], addr[i+1:], true
}

// createAccounts builds every user's mailboxes and populates them.
func (t *Target) createAccounts(ctx context.Context) error {
	mailboxes := append(append([]string(nil), standardMailboxes...), t.opts.Folders...)
	for _, u := range t.opts.Users {
		if _, dup := t.byLogin[u.Login]; dup {
			return fmt.Errorf("target: duplicate login %q", u.Login)
		}
		addrKey := strings.ToLower(u.Address)
		if _, dup := t.byAddress[addrKey]; dup {
			return fmt.Errorf("target: duplicate address %q", u.Address)
		}
		acc := &account{User: u, mem: imapmemserver.NewUser(u.Login, u.Password)}
		for _, name := range mailboxes {
			if err := acc.mem.Create(name, nil); err != nil {
				return fmt.Errorf("target: user %q: create %q: %w", u.Login, name, err)
			}
			if err := acc.mem.Subscribe(name); err != nil {
				return fmt.Errorf("target: user %q: subscribe %q: %w", u.Login, name, err)
			}
		}
		t.byLogin[u.Login] = acc
		t.byAddress[addrKey] = acc

		if t.opts.Populate == nil {
			continue
		}
		for _, name := range mailboxes {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("target: populate: %w", err)
			}
			add := func(msg []byte, at time.Time) error {
				_, err := acc.mem.Append(name, bytes.NewReader(msg), &imap.AppendOptions{Time: at})
				return err
			}
			if err := t.opts.Populate(u, name, add); err != nil {
				return fmt.Errorf("target: populate user %q mailbox %q: %w", u.Login, name, err)
			}
		}
	}
	return nil
}

// IMAPAddr returns the IMAP listener's address (host:port).
func (t *Target) IMAPAddr() string { return t.imapLn.Addr().String() }

// Certificate is the DER certificate the target serves TLS with (nil
// without TLS), for a client that must trust exactly it
// (tlsconf.PinnedClientTLS).
func (t *Target) Certificate() []byte {
	if c := t.opts.TLSConfig; c != nil && len(c.Certificates) > 0 && len(c.Certificates[0].Certificate) > 0 {
		return c.Certificates[0].Certificate[0]
	}
	return nil
}

// SMTPAddr returns the SMTP listener's address (host:port).
func (t *Target) SMTPAddr() string { return t.smtpLn.Addr().String() }

// LocalDomain returns the domain whose mail is delivered locally.
func (t *Target) LocalDomain() string { return t.opts.LocalDomain }

// StallIMAP stalls (true) or resumes (false) the IMAP server. While stalled,
// every IMAP connection, existing or newly accepted, stops answering: reads
// and writes on the server side block until the stall ends, the connection
// is closed, or its deadline passes. Connections are still accepted.
// SMTP is not affected.
func (t *Target) StallIMAP(stalled bool) { t.gate.set(stalled) }

// SetDeliveryDelay changes, while the target runs, the delay of every
// local delivery (as Faults.DeliveryDelay, DelayEvery still applies); 0
// goes back to Faults.DeliveryDelay.
func (t *Target) SetDeliveryDelay(d time.Duration) { t.delay.Store(int64(max(d, 0))) }

// Stats returns a snapshot of the counters. It doesn't perform I/O.
func (t *Target) Stats() Stats {
	c := &t.counters
	s := Stats{
		Delivered:   c.delivered.Load(),
		Relayed:     c.relayed.Load(),
		RelayFailed: c.relayFailed.Load(),
		Rejected:    c.rejected.Load(),
		Deferred:    c.deferred.Load(),
		Dropped:     c.dropped.Load(),
		Duplicated:  c.duplicated.Load(),
		Corrupted:   c.corrupted.Load(),
		Delayed:     c.delayed.Load(),
		PeakActive:  t.act.peak.Load(),
		Contended:   t.act.contended.Load(),
	}
	if t.relay != nil {
		s.Queue = int(t.relay.pending.Load())
	}
	return s
}

// Close ends a stall, closes both listeners and every open connection,
// stops the relay workers (messages still queued are counted RelayFailed)
// and waits for them at most a few seconds. It is safe to call more than
// once; later calls return the first call's result.
func (t *Target) Close() error {
	t.closeOnce.Do(func() {
		close(t.closing)
		t.gate.set(false)
		var errs []error
		// Close the listeners ourselves too: a server whose Serve has not
		// registered its listener yet would not close it.
		if err := t.imapLn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		if err := t.smtpLn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		t.imapSrv.Close()
		t.imapStall.closeAll()
		t.smtpSrv.Close()
		t.serveWG.Wait()
		t.delayed.Wait()
		if t.relay != nil {
			if err := t.relay.stop(closeWait); err != nil {
				errs = append(errs, err)
			}
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

// imapSession is an imapmemserver session whose LOGIN looks the user up in
// the target's accounts.
type imapSession struct {
	*imapmemserver.UserSession // nil until logged in
	t                          *Target
	done                       func() // counts the session out of Target.Active
}

var _ imapserver.Session = (*imapSession)(nil)

func (s *imapSession) Login(username, password string) error {
	s.t.commandDelay("LOGIN")
	acc := s.t.byLogin[username]
	if acc == nil {
		return imapserver.ErrAuthFailed
	}
	if err := acc.mem.Login(username, password); err != nil {
		return err
	}
	s.UserSession = imapmemserver.NewUserSession(acc.mem)
	return nil
}

func (s *imapSession) Close() error {
	if s.done != nil {
		s.done()
	}
	if s.UserSession == nil {
		return nil
	}
	return s.UserSession.Close()
}

// Idle sends the updates already pending before it waits for new ones:
// imapmemserver's Idle only reports updates queued after it began, so a
// message delivered between a client's last command and its IDLE would
// go unannounced until the next update. A window of a few instructions
// between the Poll and the wait remains.
func (s *imapSession) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	if err := s.UserSession.Poll(w, true); err != nil {
		return err
	}
	return s.UserSession.Idle(w, stop)
}
