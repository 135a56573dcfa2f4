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
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/lib/ctxsleep"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// Group is users of one client profile and one user profile
// ([population]): each user's client holds Client.Connections
// connections while online, resyncs on every connect, fetches new mail
// with the profile's item list, and acts on it as the user profile says.
type Group struct {
	Name   string
	User   workload.UserProfile
	Client workload.ClientProfile
	Users  []workload.User

	stats *groupCounts
}

// groupCounts are a group's counts so far.
type groupCounts struct {
	connected, connects, attempts, resyncs, newMail, opened, removed, forgotten atomic.Int64
	held                                                                        atomic.Int64 // connected when MarkHeld was called

	mu            sync.Mutex
	windowStart   WindowCounts // at MarkWindowStart
	window        WindowCounts // between MarkWindowStart and MarkHeld
	windowStarted bool
}

// WindowCounts are a group's actions counted in the measurement window.
type WindowCounts struct {
	Connects, Resyncs, NewMail, Opened, Removed int64
}

func (c *groupCounts) now() WindowCounts {
	return WindowCounts{Connects: c.connects.Load(), Resyncs: c.resyncs.Load(), NewMail: c.newMail.Load(), Opened: c.opened.Load(), Removed: c.removed.Load()}
}

// MarkWindowStart notes each group's counts at the start of the
// measurement window.
func (p *Population) MarkWindowStart() {
	for i := range p.cfg.Groups {
		c := p.cfg.Groups[i].stats
		c.mu.Lock()
		c.windowStart, c.windowStarted = c.now(), true
		c.mu.Unlock()
	}
}

// MarkHeld notes the connections each group holds now (the end of the
// measurement window), for GroupStats' Held, and its counts in the
// window since MarkWindowStart, for GroupStats' Window.
func (p *Population) MarkHeld() {
	for i := range p.cfg.Groups {
		c := p.cfg.Groups[i].stats
		c.held.Store(c.connected.Load())
		c.mu.Lock()
		if c.windowStarted {
			n, s := c.now(), c.windowStart
			c.window = WindowCounts{Connects: n.Connects - s.Connects, Resyncs: n.Resyncs - s.Resyncs, NewMail: n.NewMail - s.NewMail, Opened: n.Opened - s.Opened, Removed: n.Removed - s.Removed}
		}
		c.mu.Unlock()
	}
}

// GroupStats are a group's counts so far.
type GroupStats struct {
	Name  string
	Users int
	// Connected are the connections held now, Held those at MarkHeld;
	// Connects the logins that selected their mailbox, of Attempts.
	Connected, Held, Connects, Attempts int64
	// Resyncs done; new messages fetched (fetch_new); messages opened,
	// deleted or moved; actions forgotten (a user more than
	// maxPendingActions behind).
	Resyncs, NewMail, Opened, Removed, Forgotten int64
	// Window holds the logins, resyncs, new messages, opens and removals
	// of the measurement window (MarkWindowStart to MarkHeld).
	Window WindowCounts
}

// GroupStats returns each group's counts so far, in the groups' order.
func (p *Population) GroupStats() []GroupStats {
	out := make([]GroupStats, len(p.cfg.Groups))
	for i := range p.cfg.Groups {
		g := &p.cfg.Groups[i]
		c := g.stats
		c.mu.Lock()
		w := c.window
		c.mu.Unlock()
		out[i] = GroupStats{Window: w, Name: g.Name, Users: len(g.Users), Connected: c.connected.Load(), Held: c.held.Load(), Connects: c.connects.Load(), Attempts: c.attempts.Load(),
			Resyncs: c.resyncs.Load(), NewMail: c.newMail.Load(), Opened: c.opened.Load(), Removed: c.removed.Load(), Forgotten: c.forgotten.Load()}
	}
	return out
}

// maxPendingActions bounds the actions a client keeps waiting (a user who
// falls behind forgets the oldest): memory stays bounded whatever mail
// arrives.
const maxPendingActions = 256

// maxNewMail bounds the new messages one look keeps.
const maxNewMail = 1024

// action is what the user will do with one new message.
type action struct {
	due           time.Time
	uid           uint32
	info          delivery.MessageInfo
	open, replied bool
	flagged       bool
	remove        int // 0 keep, 1 delete, 2 move
}

// cache is what a client keeps of its INBOX between connects, for the
// resync.
type cache struct {
	uidValidity uint32
	modSeq      uint64
	lastUID     uint32
}

// errOffline ends a connection whose online time is over: the client
// logged out, as planned.
var errOffline = errors.New("online time over")

// groupClient is one connection of one user of a group, for the whole
// run: online, then offline, again, until ctx ends. Connection 0 is the
// INBOX's and does the user's work; the others wait on one folder each.
func (p *Population) groupClient(ctx context.Context, g *Group, u workload.User, conn int, seed uint64, at time.Time) {
	if !ctxsleep.Sleep(ctx, time.Until(at)) {
		return
	}
	rng := rand.New(rand.NewPCG(p.cfg.Seed^seed, uint64(conn)))
	st := &cache{}
	backoff := p.cfg.BackoffMin
	first := true
	// A run stands for an hour of a working day under way: each client
	// starts at a point of its online/offline cycle drawn uniformly, so
	// that logins and resyncs come at their planned rate from the start,
	// not all in the ramp and then none for Online.
	online := g.Client.Online
	if cyc := g.Client.Online + g.Client.Offline; g.Client.Online > 0 {
		pos := time.Duration(rng.Int64N(int64(cyc)))
		if pos >= g.Client.Online { // away now: back at the cycle's end
			if !ctxsleep.Sleep(ctx, cyc-pos) {
				return
			}
		} else {
			online = g.Client.Online - pos
		}
	}
	for ctx.Err() == nil {
		connected, err := p.groupSession(ctx, g, u, conn, rng, st, first, online)
		online = g.Client.Online
		if ctx.Err() != nil {
			return
		}
		first = false
		if errors.Is(err, errOffline) {
			backoff = p.cfg.BackoffMin
			if !ctxsleep.Sleep(ctx, g.Client.Offline) {
				return
			}
			continue
		}
		p.drop(err)
		if connected {
			backoff = p.cfg.BackoffMin
		}
		wait := backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)+1))
		if !ctxsleep.Sleep(ctx, wait) {
			return
		}
		backoff = min(2*backoff, p.cfg.BackoffMax)
	}
}

// folderOf is the mailbox connection conn watches.
func (p *Population) folderOf(conn int) string {
	if conn == 0 || conn > len(p.cfg.Folders) {
		return "INBOX"
	}
	return p.cfg.Folders[conn-1]
}

// groupSession is one connection from connect to logout (or failure).
func (p *Population) groupSession(ctx context.Context, g *Group, u workload.User, conn int, rng *rand.Rand, st *cache, first bool, onlineFor time.Duration) (connected bool, err error) {
	g.stats.attempts.Add(1)
	cl := g.Client
	obs := p.cfg.Observer
	exists := make(chan announcement, 1)
	cfg := p.cfg.IMAP
	cfg.Idles = true // mostly in IDLE between its actions
	cfg.Unilateral = &imapclient.Unilateral{Exists: func(n uint32) { notify(exists, announcement{n, time.Now()}) }}
	folder := p.folderOf(conn)
	start := time.Now()
	c, err := imapclient.Connect(ctx, cfg, u.Login, u.Password)
	var mb imapclient.Mailbox
	var qresync *measure.Observation // the SELECT that was the resync (QRESYNC)
	if err == nil {
		mode := cl.Resync
		opts := imapclient.SelectOptions{CondStore: conn == 0 && mode != workload.ResyncFlags && mode != workload.ResyncNone && c.Has("CONDSTORE")}
		if conn == 0 && (mode == workload.ResyncAuto || mode == workload.ResyncQResync) && c.Has("QRESYNC") {
			err = c.EnableQResync(ctx)
			if err == nil && st.modSeq > 0 {
				opts.UIDValidity, opts.QResyncModSeq = st.uidValidity, st.modSeq
			}
		}
		if err == nil {
			sel := time.Now()
			mb, err = c.SelectAs(ctx, "", folder, opts)
			if err == nil && opts.QResyncModSeq > 0 && mb.UIDValidity == st.uidValidity {
				qresync = &measure.Observation{Function: measure.ClientResync, Start: sel, Duration: time.Since(sel)}
			}
		}
		if err != nil {
			c.Close()
		}
	}
	obs.Observe(measure.Observation{Function: measure.ClientConnect, Start: start, Duration: time.Since(start), Class: measure.Classify(err), Err: err})
	if err != nil {
		return false, err
	}
	defer c.Close()
	g.stats.connects.Add(1)
	g.stats.connected.Add(1)
	defer g.stats.connected.Add(-1)

	s := &clientSession{p: p, g: g, u: u, c: c, rng: rng, obs: obs, st: st}
	if conn == 0 {
		if qresync != nil {
			// QRESYNC: the changes came with the SELECT's answer; the
			// resync is the SELECT (Client connect includes it too).
			obs.Observe(*qresync)
			g.stats.resyncs.Add(1)
			st.uidValidity, st.modSeq = mb.UIDValidity, mb.HighestModSeq
		} else if err := s.resync(ctx, mb); err != nil {
			return true, err
		}
		if err := s.list(ctx, mb); err != nil {
			return true, err
		}
		if err := s.catchUp(ctx, mb); err != nil {
			return true, err
		}
	}

	var online <-chan time.Time
	if onlineFor > 0 {
		t := time.NewTimer(onlineFor)
		defer t.Stop()
		online = t.C
	}
	// The first poll and check of a connection come at a point of their
	// period drawn uniformly: over a connection of any length the client
	// looks Online/Poll times on average, as the plan counts.
	var poll, check *every
	if conn == 0 && cl.Poll > 0 {
		poll = newEvery(time.Duration(rng.Int64N(int64(cl.Poll))), cl.Poll)
		defer poll.stop()
	}
	if !cl.Idle {
		check = newEvery(time.Duration(rng.Int64N(int64(cl.Check))), cl.Check)
		defer check.stop()
	}
	for {
		var idling *imapclient.Idling
		if cl.Idle {
			idling, err = c.Idle(ctx)
			if err != nil {
				return true, err
			}
		}
		renew := time.NewTimer(p.cfg.Renew)
		var actionDue <-chan time.Time
		var actionTimer *time.Timer
		if conn == 0 && len(s.pending) > 0 {
			actionTimer = time.NewTimer(time.Until(s.pending[0].due))
			actionDue = actionTimer.C
		}
		var a announcement
		var announced, checking, polling, acting, stop, offline bool
		select {
		case a = <-exists:
			announced = true
		case <-renew.C:
		case <-check.c():
			checking = true
			check.next()
		case <-poll.c():
			polling = true
			poll.next()
		case <-actionDue:
			acting = true
		case <-online:
			offline = true
		case <-c.Closed():
			renew.Stop()
			return true, errClosed
		case <-ctx.Done():
			stop = true
		}
		renew.Stop()
		if actionTimer != nil {
			actionTimer.Stop()
		}
		if stop || offline {
			logoutPolitely(c, idling, cfg.Timeout)
			if offline {
				return true, errOffline
			}
			return true, ctx.Err()
		}
		if idling != nil {
			if err := idling.Done(ctx); err != nil {
				return true, err
			}
		} else if checking {
			if err := c.Noop(ctx); err != nil {
				return true, err
			}
		}
		// A NOOP's answer (or the wait's end) may have carried an EXISTS;
		// only one that IDLE announced times a notification.
		if !announced {
			select {
			case a = <-exists:
			default:
			}
		}
		timed := announced && idling != nil
		if conn != 0 {
			continue
		}
		if a.n != 0 { // new mail: the messages after the last UID the client knows
			if err := s.newMail(ctx, a.at, timed); err != nil {
				return true, err
			}
			acting = true // what is due at once is done before the next wait
		}
		if acting {
			if err := s.act(ctx); err != nil {
				return true, err
			}
		}
		if polling {
			for _, f := range p.cfg.Folders[min(cl.Connections-1, len(p.cfg.Folders)):] {
				if err := c.StatusAs(ctx, measure.ClientStatus, f); err != nil {
					return true, err
				}
			}
		}
	}
}

type announcement struct {
	n  uint32
	at time.Time
}

// notify hands a to the client: the newest count wins, with the first
// time.
func notify(ch chan announcement, a announcement) {
	select {
	case ch <- a:
	default:
		select {
		case old := <-ch:
			a.at = old.at
		default:
		}
		ch <- a
	}
}

// clientSession is connection 0's state during one connection.
type clientSession struct {
	p       *Population
	g       *Group
	u       workload.User
	c       *imapclient.Client
	rng     *rand.Rand
	obs     measure.Observer
	st      *cache
	pending []action
}

// resync brings the cache up to date after SELECT, as the profile says.
func (s *clientSession) resync(ctx context.Context, mb imapclient.Mailbox) error {
	cl := s.g.Client
	defer func() { s.st.uidValidity, s.st.modSeq = mb.UIDValidity, mb.HighestModSeq }()
	if cl.Resync == workload.ResyncNone || mb.Messages == 0 {
		return nil
	}
	lo := uint32(1)
	if w := uint32(cl.ResyncWindow); w > 0 && mb.UIDNext > w {
		lo = mb.UIDNext - w
	}
	var since uint64
	if mb.HighestModSeq > 0 && s.st.modSeq > 0 && s.st.uidValidity == mb.UIDValidity {
		if s.st.modSeq == mb.HighestModSeq {
			s.g.stats.resyncs.Add(1)
			return nil // CONDSTORE: nothing changed, nothing to fetch
		}
		since = s.st.modSeq
	}
	flags := workload.FetchItems{{Name: "UID"}, {Name: "FLAGS"}}
	_, err := s.c.UIDFetchItems(ctx, measure.ClientResync, lo, 0, flags, since, 0) // a cache's update: nothing kept here
	if err == nil {
		s.g.stats.resyncs.Add(1)
	}
	return err
}

// list fetches the message list, the newest ListMessages.
func (s *clientSession) list(ctx context.Context, mb imapclient.Mailbox) error {
	n := uint32(s.g.Client.ListMessages)
	if n == 0 || mb.Messages == 0 {
		return nil
	}
	from := uint32(1)
	if mb.Messages > n {
		from = mb.Messages - n + 1
	}
	_, err := s.c.FetchItems(ctx, measure.ClientList, from, mb.Messages, s.g.Client.FetchList, 0)
	return err
}

// catchUp, after a connect, fetches as new what arrived since the client
// last looked (a client's cache knows its last UID), untimed: the client
// was away, the server did not keep it waiting. On the first connect of
// the run everything in the INBOX is old mail.
func (s *clientSession) catchUp(ctx context.Context, mb imapclient.Mailbox) error {
	if mb.UIDNext == 0 {
		return nil
	}
	if s.st.lastUID == 0 || s.st.uidValidity != mb.UIDValidity {
		s.st.lastUID = mb.UIDNext - 1
		return nil
	}
	if mb.UIDNext-1 > s.st.lastUID {
		return s.newMail(ctx, time.Time{}, false)
	}
	return nil
}

// newMail fetches the messages after the last UID the client knows (UID
// FETCH last+1:*, as clients with a cache do) with the profile's fetch_new
// list and plans what the user does with them; an IDLE announcement
// (timed, at at) goes to OnNewMail, for the notification and the ledger.
func (s *clientSession) newMail(ctx context.Context, at time.Time, timed bool) error {
	from := s.st.lastUID + 1
	// At most maxNewMail kept a look: a server that answers "from:*"
	// with more costs the fetch's time, not memory; the rest comes again
	// with the next look (lastUID stops at the last one kept).
	got, err := s.c.UIDFetchItems(ctx, measure.ClientNewMail, from, 0, s.g.Client.FetchNew, 0, maxNewMail)
	if err != nil {
		return err
	}
	// n:* names the newest message even when its UID is below n.
	infos := got[:0]
	for _, mi := range got {
		if mi.UID >= from {
			infos = append(infos, mi)
			s.st.lastUID = max(s.st.lastUID, mi.UID)
		}
	}
	s.g.stats.newMail.Add(int64(len(infos)))
	if timed && s.p.cfg.OnNewMail != nil && len(infos) > 0 {
		s.p.cfg.OnNewMail(s.u, infos, at)
	}
	up := s.g.User
	now := time.Now()
	for _, mi := range infos {
		act := action{uid: mi.UID, info: mi}
		act.open = s.rng.Float64() < up.Read
		if act.open {
			act.replied = s.rng.Float64() < up.Replied
			act.flagged = s.rng.Float64() < up.Flagged
		}
		switch r := s.rng.Float64(); {
		case r < up.Deleted:
			act.remove = 1
		case r < up.Deleted+up.Moved:
			act.remove = 2
		}
		if !act.open && act.remove == 0 {
			continue
		}
		act.due = now
		if up.ActionDelay > 0 {
			act.due = now.Add(time.Duration(s.rng.ExpFloat64() * float64(up.ActionDelay)))
		}
		if len(s.pending) == maxPendingActions {
			s.pending = s.pending[1:]
			s.g.stats.forgotten.Add(1)
		}
		i, _ := slices.BinarySearchFunc(s.pending, act.due, func(x action, t time.Time) int { return x.due.Compare(t) })
		s.pending = slices.Insert(s.pending, i, act)
	}
	return nil
}

// act does what is due.
func (s *clientSession) act(ctx context.Context) error {
	now := time.Now()
	for len(s.pending) > 0 && !s.pending[0].due.After(now) {
		a := s.pending[0]
		s.pending = s.pending[1:]
		c := s.c
		if a.open {
			if _, err := c.UIDFetchItems(ctx, measure.ClientOpen, a.uid, a.uid, s.g.Client.FetchOpen, 0, 0); err != nil {
				return err
			}
			s.g.stats.opened.Add(1)
			if a.replied {
				if err := c.UIDStoreFlags(ctx, measure.ClientChange, a.uid, true, `\Answered`); err != nil {
					return err
				}
			}
			if a.flagged {
				if err := c.UIDStoreFlags(ctx, measure.ClientChange, a.uid, true, `\Flagged`); err != nil {
					return err
				}
			}
		}
		switch a.remove {
		case 1:
			s.removed(a.info)
			if err := c.UIDDelete(ctx, measure.ClientChange, a.uid); err != nil {
				return err
			}
		case 2:
			s.removed(a.info)
			if err := c.UIDMove(ctx, measure.ClientChange, a.uid, s.moveTarget()); err != nil {
				return err
			}
		}
	}
	return nil
}

// removed tells the ledger a message is about to leave the INBOX.
func (s *clientSession) removed(mi delivery.MessageInfo) {
	s.g.stats.removed.Add(1)
	if s.p.cfg.OnRemoved != nil {
		s.p.cfg.OnRemoved(s.u, []delivery.MessageInfo{mi})
	}
}

// moveTarget is a folder of [mailboxes] (not Sent, Drafts or Trash),
// drawn; Trash when there is none.
func (s *clientSession) moveTarget() string {
	if n := len(s.p.cfg.MoveTo); n > 0 {
		return s.p.cfg.MoveTo[s.rng.IntN(n)]
	}
	return "Trash"
}

// every is a timer that fires first after a given phase, then every d;
// a nil *every never fires.
type every struct {
	t *time.Timer
	d time.Duration
}

func newEvery(first, d time.Duration) *every { return &every{t: time.NewTimer(first), d: d} }

func (e *every) c() <-chan time.Time {
	if e == nil {
		return nil
	}
	return e.t.C
}

// next arms the tick after the one just received.
func (e *every) next() { e.t.Reset(e.d) }

func (e *every) stop() { e.t.Stop() }
