package smtpsink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/mailbench/mailbench/delivery"
	smtp "github.com/mailbench/mailbench/internal/gosmtp"
)

// Defaults applied by New to zero-valued Options fields.
const (
	DefaultDomain          = "mailbench-sink"
	DefaultMaxMessageBytes = 32 << 20
	DefaultMaxRecipients   = 1000
	DefaultMaxLineLength   = 2000
	DefaultTimeout         = 60 * time.Second
	DefaultMaxConnections  = 1000
)

// RelayDelayMax is the largest relay delay the histogram tells apart; longer
// delays are recorded as RelayDelayMax, negative ones (clock skew between
// the sending and the sink's host) as zero.
const RelayDelayMax = time.Hour

// ErrClosed is returned by Serve, ListenAndServe and Start after Close or
// Shutdown.
var ErrClosed = errors.New("smtpsink: sink closed")

// Options configure a Sink. Zero values mean the documented default.
type Options struct {
	// Listen, if set, replaces the sink's own TCP listener for Start and
	// ListenAndServe (an in-memory network in tests). The sink's own
	// listener turns TCP keep-alive off on accepted connections.
	Listen func(ctx context.Context, network, address string) (net.Listener, error)

	Addr            string                 // listen address for ListenAndServe and Start, e.g. "127.0.0.1:2526"
	Domain          string                 // hostname in the banner; default "mailbench-sink"
	TLSConfig       *tls.Config            // non-nil: offer STARTTLS, or implicit TLS when ImplicitTLS
	ImplicitTLS     bool                   // TLS from the first byte (needs TLSConfig)
	MaxMessageBytes int64                  // default 32 MiB; negative: no limit
	MaxRecipients   int                    // per message; default 1000; negative: no limit
	MaxLineLength   int                    // per line, commands and data; default 2000; negative: no limit
	ReadTimeout     time.Duration          // per command line, and per message's DATA as a whole, whatever trickles in; default 60s (fires after ≥ 63/64 of it: see deadlineSlackDiv)
	WriteTimeout    time.Duration          // per reply; default 60s (likewise)
	MaxConnections  int                    // open at once; default 1000; negative: no limit. Beyond it: 421 and close
	SaveDir         string                 // "": discard bodies; else each accepted message is written to <n>.eml (created by New)
	Faults          Faults                 // fault modes for testing the server under test and the benchmark
	OnMessage       func(delivery.Arrival) // optional; called once per accepted message of this run (see Belongs), once its 250 reply is out (a message whose 250 was not sent does not count); must be fast and safe for concurrent use
	// Belongs, when set, says whether a message (by its X-Mailbench-Id,
	// "" when it has none) is this run's. Others are accepted but counted
	// apart as foreign (Counts.Foreign, ForeignRuns): they enter no count,
	// no relay delay and no OnMessage. nil: every message belongs.
	Belongs  func(id string) bool
	Now      func() time.Time // clock for delivery.Arrival.Received; default time.Now
	ErrorLog *log.Logger      // go-smtp's reports of failed connections; nil discards them
}

// Faults make the sink misbehave on purpose.
type Faults struct {
	Delay           time.Duration // sleep before the final reply to DATA/BDAT
	RejectEvery     int           // every Nth fully received message gets 451 4.3.0 (0 = never)
	RejectPermanent bool          // with RejectEvery: 554 5.3.0 instead of 451
}

// Counts are the sink's running totals.
type Counts struct {
	Connections int64 // connections accepted and served
	Messages    int64 // messages accepted (250 to the final dot)
	Recipients  int64 // recipients of accepted messages
	Bytes       int64 // size of accepted messages
	Rejected    int64 // messages refused by Faults.RejectEvery
	Errors      int64 // message transfers that failed: too big, long line, bad header, timeout, I/O
	Active      int64 // connections open now
	Refused     int64 // connections refused with 421 beyond MaxConnections
	Evicted     int64 // connections closed (421) to make room for a new one when full: the idlest, idle ≥ 1 s
	// Foreign counts accepted messages that are not this run's (see
	// Options.Belongs): mail of an earlier run that the server retried,
	// or stray mail. They are in none of the counts above.
	Foreign int64
}

// Sink is an SMTP server that accepts, counts and discards (or saves) mail.
// Its methods are safe for concurrent use.
type Sink struct {
	opts   Options
	server *smtp.Server
	now    func() time.Time

	mu        sync.Mutex
	ln        *limitListener
	closed    bool
	closing   chan struct{} // closed by Close: aborts fault delays
	serveDone chan struct{} // closed when the Serve started by Start returns
	serveErr  error

	connections, active, refused atomic.Int64
	evicted                      atomic.Int64
	messages, recipients, bytes  atomic.Int64
	rejected, errors             atomic.Int64
	transfers                    atomic.Int64 // fully received messages, for RejectEvery
	saved                        atomic.Int64 // file names in SaveDir

	histMu sync.Mutex
	hist   *hdrhistogram.Histogram

	foreignMu   sync.Mutex
	foreign     int64
	foreignRuns map[string]int64 // by run id ("" : no mailbench id), at most MaxForeignRuns
}

// MaxForeignRuns bounds the run ids ForeignRuns tells apart; further ones
// are counted under "other".
const MaxForeignRuns = 32

// recordForeign counts one foreign message by its run id.
func (s *Sink) recordForeign(id string) {
	run := ""
	if i := strings.IndexByte(id, '-'); i > 0 {
		run = id[:i]
	} else if id != "" {
		run = "other"
	}
	s.foreignMu.Lock()
	defer s.foreignMu.Unlock()
	s.foreign++
	if s.foreignRuns == nil {
		s.foreignRuns = map[string]int64{}
	}
	if _, ok := s.foreignRuns[run]; !ok && len(s.foreignRuns) >= MaxForeignRuns {
		run = "other"
	}
	s.foreignRuns[run]++
}

// ForeignRuns returns the foreign messages by run id (the part of their
// X-Mailbench-Id before the "-"; "" for messages without one, "other"
// beyond MaxForeignRuns ids). Safe for concurrent use.
func (s *Sink) ForeignRuns() map[string]int64 {
	s.foreignMu.Lock()
	defer s.foreignMu.Unlock()
	return maps.Clone(s.foreignRuns)
}

// New validates opts, applies defaults and returns a Sink that is not yet
// listening. It creates opts.SaveDir if that is set; otherwise it doesn't
// perform I/O.
func New(opts Options) (*Sink, error) {
	if opts.Domain == "" {
		opts.Domain = DefaultDomain
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxRecipients == 0 {
		opts.MaxRecipients = DefaultMaxRecipients
	}
	if opts.MaxLineLength == 0 {
		opts.MaxLineLength = DefaultMaxLineLength
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = DefaultTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultTimeout
	}
	if opts.MaxConnections == 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	switch {
	case opts.ReadTimeout < 0 || opts.WriteTimeout < 0:
		return nil, errors.New("smtpsink: timeouts must be positive")
	case opts.ImplicitTLS && opts.TLSConfig == nil:
		return nil, errors.New("smtpsink: ImplicitTLS needs a TLSConfig")
	case opts.Faults.Delay < 0:
		return nil, errors.New("smtpsink: Faults.Delay must not be negative")
	case opts.Faults.RejectEvery < 0:
		return nil, errors.New("smtpsink: Faults.RejectEvery must not be negative")
	}
	if opts.SaveDir != "" {
		if err := os.MkdirAll(opts.SaveDir, 0o755); err != nil {
			return nil, fmt.Errorf("smtpsink: save directory: %w", err)
		}
	}

	s := &Sink{
		opts:    opts,
		now:     opts.Now,
		closing: make(chan struct{}),
		hist:    newRelayHistogram(),
	}
	if s.now == nil {
		s.now = time.Now
	}

	srv := smtp.NewServer(backend{s})
	srv.Domain = opts.Domain
	srv.MaxMessageBytes = max(opts.MaxMessageBytes, 0)
	srv.MaxRecipients = max(opts.MaxRecipients, 0)
	srv.MaxLineLength = max(opts.MaxLineLength, 0)
	srv.ReadTimeout = opts.ReadTimeout
	srv.WriteTimeout = opts.WriteTimeout
	if !opts.ImplicitTLS {
		srv.TLSConfig = opts.TLSConfig // advertises STARTTLS
	}
	if opts.ErrorLog != nil { // not a typed nil in the interface
		srv.ErrorLog = opts.ErrorLog
	} else {
		srv.ErrorLog = log.New(io.Discard, "", 0)
	}
	s.server = srv
	return s, nil
}

func newRelayHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, RelayDelayMax.Microseconds(), 3)
}

// register wraps ln in the connection limiter and makes it the sink's
// listener. It closes ln and fails if the sink is closed or already serving.
func (s *Sink) register(ln net.Listener) (*limitListener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ln.Close()
		return nil, ErrClosed
	}
	if s.ln != nil {
		ln.Close()
		return nil, errors.New("smtpsink: already serving")
	}
	var implicit *tls.Config
	if s.opts.ImplicitTLS {
		implicit = s.opts.TLSConfig
	}
	s.ln = newLimitListener(ln, s, implicit)
	return s.ln, nil
}

// Serve accepts connections on ln and serves them until Close or Shutdown,
// then returns nil; it returns another error if accepting fails for good.
// The sink takes ownership of ln. A sink serves one listener in its life.
func (s *Sink) Serve(ln net.Listener) error {
	ll, err := s.register(ln)
	if err != nil {
		return err
	}
	return s.serve(ll)
}

func (s *Sink) serve(ll *limitListener) error {
	err := s.server.Serve(ll)
	if errors.Is(err, net.ErrClosed) && s.isClosed() {
		return nil
	}
	return err
}

func (s *Sink) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// listen listens on Options.Addr, through Options.Listen when set.
func (s *Sink) listen() (net.Listener, error) {
	if s.opts.Listen != nil {
		return s.opts.Listen(context.Background(), "tcp", s.opts.Addr)
	}
	// No TCP keep-alive probes on accepted connections. Go enables them by
	// default, with four setsockopt calls per connection (SO_KEEPALIVE,
	// TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT): a cost per message when
	// every message comes on a connection of its own. They would find dead
	// peers after 15 s of silence plus 9 probes; the sink doesn't need
	// them, since every read and write has a deadline (ReadTimeout and
	// WriteTimeout are never zero), so a connection whose peer is gone ends
	// within ReadTimeout anyway.
	lc := net.ListenConfig{KeepAlive: -1}
	return lc.Listen(context.Background(), "tcp", s.opts.Addr)
}

// ListenAndServe listens on TCP Options.Addr and calls Serve.
func (s *Sink) ListenAndServe() error {
	ln, err := s.listen()
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Start listens on TCP Options.Addr now, so that Addr is known when it
// returns, and serves in the background. Wait returns the result.
func (s *Sink) Start() error {
	ln, err := s.listen()
	if err != nil {
		return err
	}
	ll, err := s.register(ln)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.serveDone = done
	s.mu.Unlock()
	go func() {
		err := s.serve(ll)
		s.mu.Lock()
		s.serveErr = err
		s.mu.Unlock()
		close(done)
	}()
	return nil
}

// Wait blocks until the background serving begun by Start ends and returns
// its error (nil after Close or Shutdown). Without Start it returns nil at once.
func (s *Sink) Wait() error {
	s.mu.Lock()
	done := s.serveDone
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serveErr
}

// Addr is the address the sink listens on, or nil before Serve or Start.
func (s *Sink) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// markClosed stops new Serve calls and returns the listener, if any.
func (s *Sink) markClosed() *limitListener {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.ln
}

// Close closes the listener and every connection at once. Messages waiting
// in Faults.Delay get 421. Close is idempotent.
func (s *Sink) Close() error {
	ll := s.markClosed()
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	err := s.server.Close()
	if errors.Is(err, smtp.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	if ll != nil {
		ll.Close()
		ll.closeAll()
	}
	return err
}

// closingNow reports whether Close has begun.
func (s *Sink) closingNow() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// Shutdown stops accepting connections and waits for open ones to end: a
// client's QUIT, or ReadTimeout of silence. If ctx ends first, Shutdown
// closes the remaining connections as Close does and returns ctx's error.
func (s *Sink) Shutdown(ctx context.Context) error {
	ll := s.markClosed()
	if ll != nil {
		ll.Close() // also when go-smtp has not registered it yet
	}
	err := s.server.Shutdown(ctx)
	if ctx.Err() != nil {
		s.Close()
		return ctx.Err()
	}
	if errors.Is(err, smtp.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Counts returns the running totals. It is safe for concurrent use and
// doesn't perform I/O.
func (s *Sink) Counts() Counts {
	return Counts{
		Connections: s.connections.Load(),
		Messages:    s.messages.Load(),
		Recipients:  s.recipients.Load(),
		Bytes:       s.bytes.Load(),
		Rejected:    s.rejected.Load(),
		Errors:      s.errors.Load(),
		Active:      s.active.Load(),
		Refused:     s.refused.Load(),
		Evicted:     s.evicted.Load(),
		Foreign:     s.foreignCount(),
	}
}

// RelayDelay returns a copy of the relay-delay histogram: Received − Sent in
// microseconds, for every accepted message that carried a valid
// X-Mailbench-Sent header. Safe for concurrent use.
func (s *Sink) RelayDelay() *hdrhistogram.Histogram {
	h := newRelayHistogram()
	s.histMu.Lock()
	defer s.histMu.Unlock()
	h.Merge(s.hist)
	return h
}

func (s *Sink) recordRelayDelay(d time.Duration) {
	us := min(max(d.Microseconds(), 0), RelayDelayMax.Microseconds())
	s.histMu.Lock()
	defer s.histMu.Unlock()
	s.hist.RecordValue(us)
}

// relaySummary returns count and the 50th, 99th percentile and maximum.
func (s *Sink) relaySummary() (n int64, p50, p99, maxv time.Duration) {
	s.histMu.Lock()
	defer s.histMu.Unlock()
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return s.hist.TotalCount(), us(s.hist.ValueAtQuantile(50)), us(s.hist.ValueAtQuantile(99)), us(s.hist.Max())
}

func (s *Sink) foreignCount() int64 {
	s.foreignMu.Lock()
	defer s.foreignMu.Unlock()
	return s.foreign
}
