// Package idlewatch times local deliveries to the millisecond: it
// watches a few users' INBOXes for the whole run, each on its own IMAP
// connection in IDLE (RFC 2177), and tells the ledger the moment the
// server announced each new message (EXISTS). On a server without IDLE it
// polls with NOOP instead, and the poll interval is the resolution. It
// also checks the server's clock against mailbench's (ProbeClock), which
// INTERNALDATE-based delivery times depend on. Its commands are not timed
// functions.
package idlewatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/workload"
)

// Config configures a Watcher. Zero values mean the defaults.
type Config struct {
	// IMAP says where to connect; its Observer and Unilateral are
	// replaced. Its Timeout bounds every command.
	IMAP imapclient.Config
	// Users are the users to watch (see Sample); one connection each.
	Users []workload.User
	// Poll is the NOOP interval on a server without IDLE (default 500 ms).
	Poll time.Duration
	// Refresh is how long one IDLE lasts at most before it is ended and
	// restarted, so that a server that stopped answering is noticed by
	// DONE's deadline (default 30 s).
	Refresh time.Duration
	// Retry is the pause before reconnecting after a failure (default 1 s).
	Retry time.Duration
}

// maxEvents bounds the EXISTS announcements kept per watched INBOX between
// two fetches; beyond it the oldest are dropped (their messages are then
// timed by the fetch, later).
const maxEvents = 1024

// Stats counts what a Watcher did.
type Stats struct {
	Users     int    // INBOXes watched
	Mode      string // "IDLE", "poll" or "" before the first connection
	Announced int64  // messages announced and reported to the ledger
	// Ahead counts messages announced before a fetch could return them,
	// reported as visible when it could; AheadMax is the longest lead.
	Ahead      int64
	AheadMax   time.Duration
	Connects   int64  // connections made (one per user, more after failures)
	Errors     int64  // failures (connection, timeout, NO/BAD), not counting those cut by the end of Run
	LastError  string // never holds a password
	Resolution time.Duration
}

// Watcher watches INBOXes and reports announcements to a ledger.
type Watcher struct {
	l   *delivery.Ledger
	cfg Config

	announced, connects, errors atomic.Int64
	ahead, aheadMax             atomic.Int64 // messages announced ahead of visibility; the longest lead (ns)
	idle, poll                  atomic.Int64 // sessions (connections) run in each mode
	lastErr                     atomic.Pointer[string]
}

// New returns a Watcher reporting to l. It doesn't perform I/O.
func New(l *delivery.Ledger, cfg Config) *Watcher {
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 30 * time.Second
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	cfg.IMAP.Observer = nil
	return &Watcher{l: l, cfg: cfg}
}

// Sample returns n of users, spread evenly over the list (the same users
// for the same list), or all of them when n ≥ len(users).
func Sample(users []workload.User, n int) []workload.User {
	if n >= len(users) {
		return append([]workload.User(nil), users...)
	}
	out := make([]workload.User, 0, n)
	for i := range n {
		out = append(out, users[i*len(users)/n])
	}
	return out
}

// Stats returns the counts so far.
func (w *Watcher) Stats() Stats {
	st := Stats{Users: len(w.cfg.Users), Announced: w.announced.Load(), Connects: w.connects.Load(), Errors: w.errors.Load(),
		Ahead: w.ahead.Load(), AheadMax: time.Duration(w.aheadMax.Load())}
	switch {
	case w.poll.Load() > 0:
		st.Mode, st.Resolution = "poll", w.cfg.Poll
	case w.idle.Load() > 0:
		st.Mode, st.Resolution = "IDLE", time.Millisecond
	}
	if p := w.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

// Start begins watching every user, one goroutine and connection each,
// until ctx is done; it returns once each INBOX is selected (or its first
// attempt failed), so that mail sent afterwards is announced. Wait waits
// for the goroutines after ctx is done.
func (w *Watcher) Start(ctx context.Context) (wait func()) {
	ready, wait := w.StartAsync(ctx)
	<-ready
	return wait
}

// StartAsync is Start without waiting for the INBOXes: ready is closed once
// each is selected (or its first attempt failed). A run starts its
// watchers this way, so that a server slow to answer them delays no
// session: mail sent before a watcher is ready is timed by the checker
// instead (by INTERNALDATE).
func (w *Watcher) StartAsync(ctx context.Context) (ready <-chan struct{}, wait func()) {
	var wg, started sync.WaitGroup
	for i := range w.cfg.Users {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			w.watch(ctx, w.cfg.Users[i], started.Done)
		}()
	}
	done := make(chan struct{})
	go func() {
		started.Wait()
		close(done)
	}()
	return done, wg.Wait
}

// inbox is the state of one watched INBOX, shared with the reader goroutine.
type inbox struct {
	mu     sync.Mutex
	events []event // EXISTS announcements not yet matched to messages
	signal chan struct{}
}

// event says that messages 1..n existed at t (n follows later expunges).
// ahead: a fetch that started after t did not return message n: the
// announcement ran ahead of the message.
type event struct {
	n     uint32
	t     time.Time
	ahead bool
}

// Looking again after an announcement that ran ahead of its message: the
// pauses start at aheadFirstPause and double up to aheadMaxPause (the
// resolution of such a delivery's time), for at most aheadFor; then the
// watch waits for the next announcement, as before. A watched INBOX costs
// at most aheadFor/aheadMaxPause (about 100) fetches per announcement that
// runs ahead, and none on a server whose announcements never do.
const (
	aheadFirstPause = 2 * time.Millisecond
	aheadMaxPause   = 20 * time.Millisecond
	aheadFor        = 2 * time.Second
)

func (b *inbox) exists(n uint32) {
	now := time.Now()
	b.mu.Lock()
	if len(b.events) == maxEvents {
		b.events = append(b.events[:0], b.events[1:]...)
	}
	b.events = append(b.events, event{n: n, t: now})
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

func (b *inbox) expunge(seq uint32) {
	b.mu.Lock()
	for i := range b.events {
		if b.events[i].n >= seq {
			b.events[i].n--
		}
	}
	b.mu.Unlock()
}

// take sorts the messages a fetch that started at since returned: for
// each, the moment the first announcement that covered it arrived
// (fallback when none did), and, when that announcement ran ahead of the
// message (an earlier fetch after it missed the message), ahead true: the
// message is then timed at since, when it was fetchable, not at the
// announcement. last is the highest sequence number the fetch saw. It
// forgets the announcements the fetch covered, marks those it did not
// (n > last, from before since) as ahead, and reports whether any is left
// that the fetch should have covered (pending: look again soon).
func (b *inbox) take(infos []delivery.MessageInfo, last uint32, fallback, since time.Time) (ats []time.Time, ahead []bool, pending bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ats = make([]time.Time, len(infos))
	ahead = make([]bool, len(infos))
	for i, mi := range infos {
		ats[i] = fallback
		for _, e := range b.events {
			if e.n >= mi.Seq && e.t.Before(ats[i]) {
				ats[i], ahead[i] = e.t, e.ahead
			}
		}
	}
	kept := b.events[:0]
	for _, e := range b.events {
		switch {
		case !e.t.Before(since): // after the fetch started: it may not cover it
			kept = append(kept, e)
		case e.n > last: // before it, and not covered: the message is not fetchable yet
			e.ahead = true
			pending = true
			kept = append(kept, e)
		}
	}
	b.events = kept
	return ats, ahead, pending
}

func (w *Watcher) fail(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	w.errors.Add(1)
	msg := err.Error()
	w.lastErr.Store(&msg)
}

// watch keeps user's INBOX watched until ctx is done, reconnecting after
// failures. ready is called once, after the first attempt to select.
func (w *Watcher) watch(ctx context.Context, u workload.User, ready func()) {
	var once sync.Once
	defer once.Do(ready)
	for ctx.Err() == nil {
		w.fail(ctx, w.session(ctx, u, func() { once.Do(ready) }))
		once.Do(ready)
		t := time.NewTimer(w.cfg.Retry)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// session is one connection's watch: SELECT INBOX, then IDLE (or NOOP
// polls) and, after each announcement, a UID FETCH of the new messages'
// ids. Only messages that arrive after the SELECT are reported.
func (w *Watcher) session(ctx context.Context, u workload.User, selected func()) error {
	b := &inbox{signal: make(chan struct{}, 1)}
	cfg := w.cfg.IMAP
	cfg.Idles = true // watches its INBOX in IDLE (or polls) for the whole run
	cfg.Unilateral = &imapclient.Unilateral{Exists: b.exists, Expunge: b.expunge}
	w.connects.Add(1)
	cl, err := imapclient.Connect(ctx, cfg, u.Login, u.Password)
	if err != nil {
		return err
	}
	defer cl.Close()
	mb, err := cl.SelectInbox(ctx)
	if err != nil {
		return err
	}
	selected() // the SELECT's own EXISTS went to the SELECT, not to b
	lastUID := uint32(0)
	if mb.UIDNext > 0 {
		lastUID = mb.UIDNext - 1
	}
	idle := cl.HasIdle()
	if idle {
		w.idle.Add(1)
	} else {
		w.poll.Add(1)
	}
	// fetch fetches the messages after lastUID and reports them: those
	// whose announcement ran ahead of them as visible at the fetch's start,
	// the others as announced. pending: an announcement the fetch should
	// have covered is still not fetchable.
	fetch := func() (pending bool, err error) {
		start := time.Now()
		infos, err := cl.UIDFetchIDs(ctx, lastUID+1, 0)
		if err != nil {
			return false, err
		}
		// "n:*" also returns the last message when its UID is below n;
		// so the highest sequence number seen is the mailbox's last one
		// whenever it holds any message.
		var last uint32
		fresh := infos[:0]
		for _, mi := range infos {
			last = max(last, mi.Seq)
			if mi.UID > lastUID {
				fresh = append(fresh, mi)
			}
		}
		ats, ahead, pending := b.take(fresh, last, time.Now(), start)
		for _, mi := range fresh {
			lastUID = max(lastUID, mi.UID)
		}
		var onTime, late []delivery.MessageInfo
		var onTimeAt, lateAnnounced, lateAt []time.Time
		for i, mi := range fresh {
			if ahead[i] {
				late, lateAnnounced, lateAt = append(late, mi), append(lateAnnounced, ats[i]), append(lateAt, start)
				w.aheadLead(start.Sub(ats[i]))
			} else {
				onTime, onTimeAt = append(onTime, mi), append(onTimeAt, ats[i])
			}
		}
		if len(onTime) > 0 {
			w.announced.Add(int64(len(onTime)))
			w.l.Announced(u.Address, onTime, onTimeAt)
		}
		if len(late) > 0 {
			w.ahead.Add(int64(len(late)))
			w.l.Visible(u.Address, late, lateAt, lateAnnounced)
		}
		return pending, nil
	}
	// fetchUntilVisible fetches, and while an announcement is ahead of its
	// message looks again after a short, growing pause (bounded), or at
	// once when another announcement comes.
	fetchUntilVisible := func() error {
		pause := aheadFirstPause
		for begun := time.Now(); ; {
			pending, err := fetch()
			if err != nil || !pending || time.Since(begun) >= aheadFor {
				return err
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-b.signal:
			case <-ctx.Done():
			}
			t.Stop()
			if ctx.Err() != nil {
				return nil
			}
			pause = min(2*pause, aheadMaxPause)
		}
	}
	for ctx.Err() == nil {
		if idle {
			id, err := cl.Idle(ctx)
			if err != nil {
				return err
			}
			t := time.NewTimer(w.cfg.Refresh)
			select {
			case <-b.signal:
			case <-t.C: // a refresh: DONE's deadline checks the server, the fetch below costs one command
			case <-ctx.Done():
			}
			t.Stop()
			if ctx.Err() != nil {
				return nil
			}
			if err := id.Done(ctx); err != nil {
				return err
			}
			select {
			case <-b.signal: // consumed: the fetch below covers it
			default:
			}
		} else {
			t := time.NewTimer(w.cfg.Poll)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			if ctx.Err() != nil {
				return nil
			}
			if err := cl.Noop(ctx); err != nil {
				return err
			}
			select {
			case <-b.signal:
			default:
				continue // nothing announced since the last poll
			}
		}
		if err := fetchUntilVisible(); err != nil {
			return err
		}
	}
	return nil
}

// aheadLead records the lead of an announcement over its message.
func (w *Watcher) aheadLead(d time.Duration) {
	for {
		cur := w.aheadMax.Load()
		if int64(d) <= cur || w.aheadMax.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}
