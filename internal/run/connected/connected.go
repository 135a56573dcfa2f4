// Package connected holds a population of long-lived IMAP clients, as
// desktop and mobile mail clients are: each logs in once, selects its
// INBOX and waits in IDLE (RFC 2177); told of new mail (EXISTS) it leaves
// IDLE, fetches the new messages' envelopes and bodies, and waits again;
// it renews IDLE before the server may end it (RFC 2177's 29 minutes),
// looks at other folders now and then (STATUS), and reconnects with
// backoff when it is dropped. The clients connect in a ramp, never all at
// once.
package connected

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/lib/ctxsleep"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// Defaults of Config.
const (
	DefaultRenew      = 25 * time.Minute // under RFC 2177's 29 minutes
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = time.Minute
)

// Config configures a Population. Zero values mean the defaults.
type Config struct {
	// IMAP says where and how to connect; its Observer receives the timed
	// operations (connect, SELECT, FETCH), its Unilateral is the
	// Population's own.
	IMAP  imapclient.Config
	Users []workload.User
	// Ramp spreads the first connects: client i connects at start + i ×
	// Ramp / len(Users). Zero: all at start.
	Ramp time.Duration
	// Renew is how long a client stays in one IDLE at most before it
	// renews it (DONE, IDLE).
	Renew time.Duration
	// Poll is how often a client looks at Folders (STATUS each); zero:
	// never.
	Poll    time.Duration
	Folders []string
	// BackoffMin and BackoffMax bound the wait before a reconnect: it
	// doubles from BackoffMin after every failed attempt, up to
	// BackoffMax, each wait drawn in [d/2, d) from Seed.
	BackoffMin, BackoffMax time.Duration
	Seed                   uint64
	// OnExists, when set, is told of every EXISTS a client received: the
	// user, the new message count and when it arrived (the new-mail
	// notification). It runs on the connection's reader and must be quick.
	OnExists func(user string, n uint32, at time.Time)
	// OnNewMail, when set, is told of the new messages a client fetched
	// after an EXISTS, with when that EXISTS arrived: the delivery ledger
	// times each delivery by it (the moment the client was told).
	OnNewMail func(u workload.User, infos []delivery.MessageInfo, announcedAt time.Time)
	// OnVisible, when set, is told of new messages that the fetch right
	// after their EXISTS did not return (the announcement ran ahead of the
	// message), when a later look found them: visibleAt is that look's
	// start. The ledger times them by it, not by the announcement.
	OnVisible func(u workload.User, infos []delivery.MessageInfo, visibleAt, announcedAt time.Time)

	// Groups are the clients of [population]'s profiles, beside Users
	// (the [clients] population). Observer receives their timed actions
	// (the Client rows); IMAP.Observer their IDLEs.
	Groups   []Group
	Observer measure.Observer
	// MoveTo are the folders a client moves messages to.
	MoveTo []string
	// OnRemoved, when set, is told of messages a client is about to
	// delete or move out of the INBOX (the ledger counts them as removed
	// by the workload unless seen).
	OnRemoved func(u workload.User, infos []delivery.MessageInfo)
}

// Looking again after an EXISTS that ran ahead of its messages: pauses of
// aheadFirstPause doubling up to aheadMaxPause, for at most aheadFor; the
// messages still missing then are fetched at the next EXISTS. The same
// bounds as the delivery watchers' (idlewatch).
const (
	aheadFirstPause = 2 * time.Millisecond
	aheadMaxPause   = 20 * time.Millisecond
	aheadFor        = 2 * time.Second
)

// highestSeq is the highest sequence number of infos, or from when higher.
func highestSeq(infos []delivery.MessageInfo, from uint32) uint32 {
	for _, mi := range infos {
		from = max(from, mi.Seq)
	}
	return from
}

// Stats are the population's counts so far.
type Stats struct {
	Connected  int64            // clients connected now
	Connects   int64            // connects that logged in and selected INBOX
	Reconnects int64            // of Connects, after a drop or a failed attempt
	Attempts   int64            // connect attempts, failed ones included
	Drops      map[string]int64 // connections lost or refused, by error class
	Idles      int64            // IDLE commands started (renewals included)
	Notified   int64            // EXISTS announcements received
	Ahead      int64            // new messages fetched only after a second look: their EXISTS ran ahead of them
}

// Population is a set of connected clients. Its methods are safe for
// concurrent use.
type Population struct {
	cfg Config

	connected, connects, reconnects, attempts, idles, notified atomic.Int64
	ahead                                                      atomic.Int64
	mu                                                         sync.Mutex
	drops                                                      map[string]int64
}

// New returns a population of cfg's users; nothing connects before Run.
func New(cfg Config) *Population {
	if cfg.Renew <= 0 {
		cfg.Renew = DefaultRenew
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = DefaultBackoffMin
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffMin)
	}
	if cfg.Observer == nil {
		cfg.Observer = measure.Discard
	}
	cfg.Groups = slices.Clone(cfg.Groups)
	for i := range cfg.Groups {
		cfg.Groups[i].stats = &groupCounts{}
	}
	return &Population{cfg: cfg, drops: map[string]int64{}}
}

// Run connects every client (in the ramp from start) and keeps it
// connected until ctx is done; it returns when every client has logged
// out or been closed.
func (p *Population) Run(ctx context.Context, start time.Time) {
	var wg sync.WaitGroup
	n := len(p.cfg.Users)
	for i, u := range p.cfg.Users {
		at := start
		if n > 0 {
			at = start.Add(time.Duration(int64(p.cfg.Ramp) * int64(i) / int64(n)))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.client(ctx, i, u, at)
		}()
	}
	// The profiles' clients: connection k of every user, spread over the
	// ramp like the others (all of a group's connections together).
	total := 0
	for _, g := range p.cfg.Groups {
		total += len(g.Users) * g.Client.Connections
	}
	k := 0
	for gi := range p.cfg.Groups {
		g := &p.cfg.Groups[gi]
		for ui, u := range g.Users {
			for conn := range g.Client.Connections {
				at := start
				if total > 0 {
					at = start.Add(time.Duration(int64(p.cfg.Ramp) * int64(k) / int64(total)))
				}
				k++
				wg.Add(1)
				go func() {
					defer wg.Done()
					p.groupClient(ctx, g, u, conn, uint64(gi)<<32|uint64(ui), at)
				}()
			}
		}
	}
	wg.Wait()
}

// Users are the [clients] population's users, one client each (the
// groups' users are in GroupStats).
func (p *Population) Users() []workload.User { return p.cfg.Users }

// Stats returns the counts so far.
func (p *Population) Stats() Stats {
	p.mu.Lock()
	drops := make(map[string]int64, len(p.drops))
	for k, v := range p.drops {
		drops[k] = v
	}
	p.mu.Unlock()
	return Stats{Connected: p.connected.Load(), Connects: p.connects.Load(), Reconnects: p.reconnects.Load(),
		Attempts: p.attempts.Load(), Drops: drops, Idles: p.idles.Load(), Notified: p.notified.Load(), Ahead: p.ahead.Load()}
}

func (p *Population) drop(err error) {
	class := string(measure.Classify(err))
	if err == errClosed || class == "" {
		class = "closed"
	}
	p.mu.Lock()
	p.drops[class]++
	p.mu.Unlock()
}

// client is one user's life: connect at at, then stay connected,
// reconnecting with backoff, until ctx is done.
func (p *Population) client(ctx context.Context, i int, u workload.User, at time.Time) {
	if !ctxsleep.Sleep(ctx, time.Until(at)) {
		return
	}
	rng := rand.New(rand.NewPCG(p.cfg.Seed, uint64(i)))
	backoff := p.cfg.BackoffMin
	first := true
	for ctx.Err() == nil {
		connected, err := p.session(ctx, u, first)
		if ctx.Err() != nil {
			return
		}
		p.drop(err)
		if connected {
			backoff = p.cfg.BackoffMin // a drop after a good connection starts the backoff again
		}
		// Wait before the next attempt: [d/2, d), d doubling up to the cap.
		wait := backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)+1))
		if !ctxsleep.Sleep(ctx, wait) {
			return
		}
		backoff = min(2*backoff, p.cfg.BackoffMax)
		first = false
	}
}

// errClosed is a connection the server closed while the client waited.
var errClosed = errors.New("the server closed the connection")

// session connects once and stays in IDLE until the connection fails or
// ctx is done. It returns whether it got connected, and why it ended.
func (p *Population) session(ctx context.Context, u workload.User, first bool) (connected bool, err error) {
	p.attempts.Add(1)
	type announcement struct {
		n  uint32
		at time.Time
	}
	exists := make(chan announcement, 1)
	cfg := p.cfg.IMAP
	cfg.Idles = true
	cfg.Unilateral = &imapclient.Unilateral{Exists: func(n uint32) {
		at := time.Now()
		p.notified.Add(1)
		if p.cfg.OnExists != nil {
			p.cfg.OnExists(u.Login, n, at)
		}
		a := announcement{n, at}
		select { // the newest count wins (with the first time); the client reads it after DONE
		case exists <- a:
		default:
			select {
			case old := <-exists:
				a.at = old.at
			default:
			}
			exists <- a
		}
	}}
	c, err := imapclient.Connect(ctx, cfg, u.Login, u.Password)
	if err != nil {
		return false, err
	}
	defer c.Close()
	mb, err := c.SelectInbox(ctx)
	if err != nil {
		return false, err
	}
	p.connects.Add(1)
	if !first {
		p.reconnects.Add(1)
	}
	p.connected.Add(1)
	defer p.connected.Add(-1)
	known := mb.Messages
	var poll <-chan time.Time
	if p.cfg.Poll > 0 && len(p.cfg.Folders) > 0 {
		t := time.NewTicker(p.cfg.Poll)
		defer t.Stop()
		poll = t.C
	}
	for {
		idling, err := c.Idle(ctx)
		if err != nil {
			return true, err
		}
		p.idles.Add(1)
		renew := time.NewTimer(p.cfg.Renew)
		var newCount uint32
		var announcedAt time.Time
		var polling, stop bool
		select {
		case a := <-exists:
			newCount, announcedAt = a.n, a.at
		case <-renew.C:
		case <-poll:
			polling = true
		case <-c.Closed():
			renew.Stop()
			return true, errClosed
		case <-ctx.Done():
			stop = true
		}
		renew.Stop()
		if stop {
			logoutPolitely(c, idling, cfg.Timeout)
			return true, ctx.Err()
		}
		if err := idling.Done(ctx); err != nil {
			return true, err
		}
		if newCount > known {
			infos, err := c.FetchRangeEnvelope(ctx, known+1, newCount)
			if err != nil {
				return true, err
			}
			if p.cfg.OnNewMail != nil && len(infos) > 0 {
				p.cfg.OnNewMail(u, infos, announcedAt)
			}
			got := highestSeq(infos, known)
			// The server announced more than it let this client fetch:
			// look again, briefly, as a client that was told of new mail
			// would, and time what appears when it appears.
			pause := aheadFirstPause
			for begun := time.Now(); got < newCount && time.Since(begun) < aheadFor; pause = min(2*pause, aheadMaxPause) {
				if !ctxsleep.Sleep(ctx, pause) {
					break
				}
				at := time.Now()
				more, err := c.FetchRangeEnvelope(ctx, got+1, newCount)
				if err != nil {
					return true, err
				}
				if len(more) > 0 {
					p.ahead.Add(int64(len(more)))
					if p.cfg.OnVisible != nil {
						p.cfg.OnVisible(u, more, at, announcedAt)
					}
				}
				got = highestSeq(more, got)
			}
			for seq := known + 1; seq <= got; seq++ {
				if _, err := c.FetchBody(ctx, seq); err != nil {
					return true, err
				}
			}
			newCount = got // what is still missing comes with the next EXISTS
		}
		if newCount != 0 {
			known = newCount // an EXPUNGE elsewhere may lower it; EXISTS is the count now
		}
		if polling {
			for _, f := range p.cfg.Folders {
				if _, err := c.Status(ctx, f); err != nil {
					return true, err
				}
			}
		}
	}
}

// logoutPolitely leaves IDLE (when idling is not nil) and logs out, under
// a deadline of its own: the run's context may already be done.
func logoutPolitely(c *imapclient.Client, idling *imapclient.Idling, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if idling == nil || idling.Done(ctx) == nil {
		_ = c.Logout(ctx)
	}
}
