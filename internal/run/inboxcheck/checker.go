// Package inboxcheck finds the mail a run delivered in the INBOXes that
// no session visits: an IMAP client that checks users with pending
// deliveries during the run and until they settle, reporting what it sees
// to the ledger. Its commands are not timed functions.
package inboxcheck

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/lib/ctxsleep"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/workload"
)

// CheckerUser is the IMAP account of one local user. The password is used
// for LOGIN only; it is never logged nor part of an error.
type CheckerUser struct {
	Address  string // the address given to New
	Login    string
	Password string
}

// Config configures a Checker. Zero values mean the defaults.
type Config struct {
	// IMAP says where to connect. Its Observer is ignored: the checker's
	// commands are not timed functions and stay out of the report's
	// timings. Its Timeout bounds every command (imapclient's default
	// when zero), so a silent server cannot hold a check forever.
	IMAP  imapclient.Config
	Users []workload.User
	// Interval is the pause between two checks during Run: at most one
	// user per Interval (default 1 s).
	Interval time.Duration
	// Revisit is how long Run leaves a user alone after checking it
	// (default 30 s).
	Revisit time.Duration
	// Concurrency is how many users Settle checks at once (default 2, at
	// most 4).
	Concurrency int
	// SettlePause is the pause between two passes of Settle (default 1 s).
	SettlePause time.Duration
	// SettleMargin is how long Settle keeps looking after the delivery
	// limit of the last delivery still missing has passed (default 5 s):
	// see Settle.
	SettleMargin time.Duration
}

// Stats counts what a Checker did.
type Stats struct {
	Checks   int64 // users checked (one IMAP connection each)
	Commands int64 // IMAP commands sent: LOGIN, SELECT, FETCH, LOGOUT (CAPABILITY not counted)
	Fetched  int64 // message headers fetched
	Errors   int64 // checks that failed (connection, timeout, NO/BAD), not counting those cut by the end of Run or Settle
	// ErrorSamples are the first distinct failures ("login: error"), at
	// most maxErrorSamples.
	ErrorSamples []string
	// LastError is the most recent failure, "" if none; it never holds a
	// password (imapclient redacts it).
	LastError string
}

// checkState is what the checker remembers of one user's INBOX.
type checkState struct {
	// uidNext is one past the highest UID the checker has been shown, not
	// the UIDNEXT SELECT reported: a server may count a message in
	// UIDNEXT before a FETCH returns it (a delivery still being saved),
	// and the next check must fetch it then.
	uidNext, uidValidity uint32
	last                 time.Time // last check started (Run only)
}

// Checker finds local deliveries that no session has seen: it visits the
// INBOX of users with pending deliveries and reports what it finds to the
// Ledger. One check costs one IMAP connection and 3-4 commands:
//
//	LOGIN (after the greeting, and CAPABILITY when the server does not announce it)
//	SELECT INBOX
//	FETCH n:* (UID FLAGS INTERNALDATE RFC822.SIZE ENVELOPE BODY.PEEK[HEADER.FIELDS (… X-Mailbench-Id …)])
//	LOGOUT
//
// The FETCH is left out when the INBOX's UIDNEXT has not moved since the
// previous check (and no delivery awaits its INTERNALDATE); it covers only
// the messages that arrived since then (n is derived from UIDNEXT), or the
// whole INBOX on a user's first check, after a UIDVALIDITY change, or when
// a delivery of the user was seen without an INTERNALDATE. BODY.PEEK sets
// no flag; SELECT only clears \Recent. During Run that is at most one
// connection per Interval; during Settle, Concurrency connections at a
// time, in passes SettlePause apart.
//
// Run and Settle must not be called at the same time; Stats is safe for
// concurrent use.
type Checker struct {
	l     *delivery.Ledger
	cfg   Config
	creds []*workload.User // by ledger user index; nil: no credentials
	state []checkState
	next  int // Run's round-robin cursor

	checks, commands, fetched, errors atomic.Int64
	sampleMu                          sync.Mutex
	samples                           []string // the first distinct errors, at most maxErrorSamples
	lastErr                           atomic.Pointer[string]
}

// New returns a Checker that reports to l. Users whose address l
// does not know are ignored, and users without credentials are never
// checked. It doesn't perform I/O.
func New(l *delivery.Ledger, cfg Config) *Checker {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Revisit <= 0 {
		cfg.Revisit = 30 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	cfg.Concurrency = min(cfg.Concurrency, 4)
	if cfg.SettlePause <= 0 {
		cfg.SettlePause = time.Second
	}
	if cfg.SettleMargin <= 0 {
		cfg.SettleMargin = 5 * time.Second
	}
	cfg.IMAP.Observer = nil
	c := &Checker{l: l, cfg: cfg, creds: make([]*workload.User, l.Users()), state: make([]checkState, l.Users())}
	for i := range cfg.Users {
		u := &cfg.Users[i]
		if idx, ok := l.UserIndex(u.Address); ok {
			c.creds[idx] = u
		}
	}
	return c
}

// Stats returns the counts so far.
func (c *Checker) Stats() Stats {
	st := Stats{Checks: c.checks.Load(), Commands: c.commands.Load(), Fetched: c.fetched.Load(), Errors: c.errors.Load()}
	c.sampleMu.Lock()
	st.ErrorSamples = slices.Clone(c.samples)
	c.sampleMu.Unlock()
	if p := c.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

// Run checks, until the time until or ctx is done, at most one user per
// Interval: the next user (round robin) with unseen or untimed deliveries
// that was not checked in the last Revisit. It returns ctx's error if ctx
// ended it, else nil.
func (c *Checker) Run(ctx context.Context, until time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if time.Now().Before(until) {
				return ctx.Err()
			}
			return nil
		case <-t.C:
		}
		if i, ok := c.pick(time.Now()); ok {
			c.state[i].last = time.Now()
			c.check(ctx, i)
		}
	}
}

// pick returns the next user due for a check.
func (c *Checker) pick(now time.Time) (int, bool) {
	n := len(c.creds)
	for k := 0; k < n; k++ {
		i := (c.next + k) % n
		if c.creds[i] == nil || now.Sub(c.state[i].last) < c.cfg.Revisit {
			continue
		}
		if need, _ := c.l.NeedsCheck(i); need {
			c.next = (i + 1) % n
			return i, true
		}
	}
	return 0, false
}

// Settle checks, in passes, every user with unseen or untimed deliveries,
// until every accepted delivery is found (local: seen, or deleted by the
// workload; remote: arrived at the sink) and timed, or until the delivery
// limit of every delivery still missing has passed (delivery.Outstanding)
// and SettleMargin more (a whole pass begun after that finds nothing
// more), or until the time until, or ctx is done. What is
// missing then is lost; what was found after its limit is late. It returns
// the unseen local deliveries left.
func (c *Checker) Settle(ctx context.Context, until time.Time) int64 {
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	var passStart time.Time // when the last completed pass began
	for {
		var due []int
		for i := range c.creds {
			if need, _ := c.l.NeedsCheck(i); need && c.creds[i] != nil {
				due = append(due, i)
			}
		}
		missing, last := c.l.Outstanding()
		if ctx.Err() != nil || len(due) == 0 && missing == 0 {
			break
		}
		if missing > 0 && passStart.After(last.Add(c.cfg.SettleMargin)) {
			break // a whole pass after every missing delivery's limit (+ margin) found nothing more: lost
		}
		start := time.Now()
		if len(due) == 0 { // only relayed mail is still on its way
			if !ctxsleep.Sleep(ctx, c.cfg.SettlePause) {
				break
			}
			passStart = start
			continue
		}
		work := make(chan int)
		var wg sync.WaitGroup
		for range min(c.cfg.Concurrency, len(due)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					c.check(ctx, i)
				}
			}()
		}
	feed:
		for _, i := range due {
			select {
			case work <- i:
			case <-ctx.Done():
				break feed
			}
		}
		close(work)
		wg.Wait()
		passStart = start
		if n, _ := c.l.Outstanding(); !c.anyDue() && n == 0 || !ctxsleep.Sleep(ctx, c.cfg.SettlePause) {
			break
		}
	}
	unseen, _ := c.l.PendingTotal()
	return unseen
}

func (c *Checker) anyDue() bool {
	for i := range c.creds {
		if need, _ := c.l.NeedsCheck(i); need && c.creds[i] != nil {
			return true
		}
	}
	return false
}

// check visits user i's INBOX once; failures are counted, not returned. A
// check cut short because ctx ended (the end of Run or Settle) is not a
// failure.
func (c *Checker) check(ctx context.Context, i int) {
	if ctx.Err() != nil {
		return
	}
	c.checks.Add(1)
	if err := c.visit(ctx, i); err != nil && !ended(ctx) {
		c.errors.Add(1)
		msg := c.creds[i].Login + ": " + err.Error() // a login, never a password
		c.lastErr.Store(&msg)
		c.sampleMu.Lock()
		if len(c.samples) < maxErrorSamples && !slices.Contains(c.samples, msg) {
			c.samples = append(c.samples, msg)
		}
		c.sampleMu.Unlock()
	}
}

// maxErrorSamples bounds Stats.ErrorSamples.
const maxErrorSamples = 3

// ended reports whether ctx is done or past its deadline. The network
// poller can fail an operation at the deadline a moment before ctx's own
// timer marks it done; such an operation was cut, not failed.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// refusalRetries and refusalPause: a visit whose LOGIN or SELECT the server
// refuses for a reason that may pass tries again at most refusalRetries
// times, after refusalPause, then twice that.
const (
	refusalRetries = 2
	refusalPause   = 250 * time.Millisecond
)

// nextUID is where the next check's FETCH starts (checkState.uidNext)
// after a FETCH that returned infos: one past the highest UID shown so far
// in this mailbox (UIDVALIDITY unchanged). A message that SELECT's UIDNEXT
// counted but the FETCH did not return is fetched again next time; 0 (no
// UID shown yet) makes the next check fetch the whole INBOX. It doesn't
// perform I/O.
func nextUID(infos []delivery.MessageInfo, st *checkState, mb imapclient.Mailbox) uint32 {
	next := uint32(0)
	if st.uidValidity == mb.UIDValidity {
		next = st.uidNext
	}
	for _, m := range infos {
		if m.UID >= next && m.UID != ^uint32(0) {
			next = m.UID + 1
		}
	}
	return next
}

func (c *Checker) visit(ctx context.Context, i int) error {
	u := c.creds[i]
	c.commands.Add(1)
	// A LOGIN or SELECT refused for a reason that may pass (a contended
	// server's bare NO, [UNAVAILABLE], [INUSE]) is tried again, on a new
	// connection, as init and clean try again.
	var cl *imapclient.Client
	var mb imapclient.Mailbox
	var lookedAt time.Time
	for attempt := 0; ; attempt++ {
		var err error
		if cl, err = imapclient.Connect(ctx, c.cfg.IMAP, u.Login, u.Password); err == nil {
			c.commands.Add(1)
			lookedAt = time.Now() // what the server had accepted by now is in this INBOX, or missing
			if mb, err = cl.SelectInbox(ctx); err != nil {
				cl.Close()
			}
		}
		if err == nil {
			break
		}
		if attempt == refusalRetries || !imapclient.TemporaryRefusal(err) || !ctxsleep.Sleep(ctx, refusalPause<<attempt) {
			return err
		}
		c.commands.Add(1)
	}
	defer cl.Close()
	st := &c.state[i]
	_, untimed := c.l.NeedsCheck(i)
	from, fetch := uint32(1), mb.Messages > 0
	if fetch && !untimed && st.uidNext != 0 && mb.UIDNext != 0 && mb.UIDValidity == st.uidValidity {
		switch newer := mb.UIDNext - st.uidNext; {
		case mb.UIDNext <= st.uidNext:
			fetch = false
		case newer < mb.Messages:
			from = mb.Messages - newer + 1
		}
	}
	shown := mb.UIDNext // what SELECT counted; when nothing is fetched, all of it is behind st.uidNext
	if fetch {
		c.commands.Add(1)
		infos, err := cl.FetchRangeEnvelope(ctx, from, 0)
		if err != nil {
			return err
		}
		c.fetched.Add(int64(len(infos)))
		c.l.SeenLocal(u.Address, infos, time.Now())
		shown = nextUID(infos, st, mb)
	}
	st.uidNext, st.uidValidity = shown, mb.UIDValidity
	c.l.Looked(u.Address, lookedAt)
	c.commands.Add(1)
	_ = cl.Logout(ctx) // what was found is reported; a failed LOGOUT changes nothing
	return nil
}
