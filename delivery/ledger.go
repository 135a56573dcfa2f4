package delivery

import (
	"fmt"
	"hash/fnv"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// chunkBits sets the size of the fixed chunks that hold the records.
const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1
)

// maxEarly bounds the sightings kept for messages whose acceptance the
// ledger has not been told of yet; earlyStale is the age after which such
// a sighting is given up on when room is needed.
const (
	maxEarly   = 8192
	earlyStale = 10 * time.Minute
)

// msgRec is one accepted message: 16 bytes.
type msgRec struct {
	accepted  int64  // UnixNano of acceptance; 0: no such message accepted
	rcptStart uint32 // index of its first recipient record
	nLocal    uint16 // local recipient records, then
	nRemote   uint16 // remote recipient records
}

// rcptRec is one (message, recipient) delivery: 16 bytes.
type rcptRec struct {
	key   uint32 // local: user index; remote: FNV-1a of the lower-cased address
	uid   uint32 // local: UID of the first sighting (0 until known)
	aux   uint32 // local, seen but not timed: observation time − acceptance, ms
	flags uint8
}

const (
	fRemote uint8 = 1 << iota
	fSeen         // local: seen in the INBOX; remote: arrived at the sink
	fTimed        // local: its delivery observation has been emitted
	fDup
	fCorrupt
	fDeleted // local: expunged by the workload's cleanup before anything saw it
)

type userState struct {
	pending int32 // accepted local deliveries not yet seen
	untimed int32 // seen, but not yet with an INTERNALDATE
	// looked is when the delivery checker last looked through the INBOX
	// successfully (UnixNano; 0: never): an unseen delivery accepted
	// before it was looked for and not found, one accepted after it was
	// never looked for.
	looked int64
}

// early is a sighting of a message of this run that arrived before its
// Accepted call (the server delivers before the client has read its 250).
type early struct {
	seq     uint64
	at      int64 // when it was stored, UnixNano
	t       int64 // local: INTERNALDATE (0 if unknown); remote: arrival
	obs     int64 // local: observation time
	key     uint32
	uid     uint32
	kind    uint8 // earlyLocal, earlyBody, earlyRemote
	corrupt bool
}

const (
	earlyLocal uint8 = iota
	earlyBody
	earlyRemote
	earlyAnnounced // local: announced by a watched INBOX (t: the announcement)
	earlyDeleted   // local: about to be deleted by a cleanup session
)

// Ledger accounts for every message of one run: it is told what the server
// accepted and what was later seen in INBOXes and at the sink, emits one
// Delivery Time observation per (message, recipient) on first sight, and
// reconciles the two at the end. It is safe for concurrent use. Its methods
// don't perform I/O; they call the Observer after releasing the lock.
type Ledger struct {
	runID   uint32
	obs     measure.Observer
	userIdx map[string]uint32 // lower-cased address -> index; read-only after New
	addrs   []string          // index -> address as given

	mu       sync.Mutex
	msgs     []*[chunkSize]msgRec
	rcpts    []*[chunkSize]rcptRec
	nRcpts   uint32
	users    []userState
	early    []early
	finished bool
	// external: remote mail reaches a sink in another process
	// (SetExternalSink); its deliveries are reconciled later, not missing.
	external bool
	c        Reconciliation
	// limitLocal and limitRemote are the delivery limits (ns; 0: none):
	// a delivery timed above its limit is late.
	limitLocal, limitRemote int64
}

// SetLimits sets the delivery limits (compliance.delivery_limit, or the
// Delivery Time rows' own limits): a delivery whose delivery time exceeds
// its limit is counted late (Reconciliation.LateLocal, LateRemote), and
// Outstanding reports when the last unfound delivery's limit passes. Zero
// means no limit. Call it before the first Accepted.
func (l *Ledger) SetLimits(local, remote time.Duration) {
	l.mu.Lock()
	l.limitLocal, l.limitRemote = int64(local), int64(remote)
	l.mu.Unlock()
}

// NewLedger returns the ledger of run runID. userAddrs are the addresses of all
// local users (recipients outside it are not accounted for: see
// Reconciliation.UnknownRecipients). obs receives the Delivery Time
// observations; nil discards them.
func NewLedger(runID uint32, userAddrs []string, obs measure.Observer) *Ledger {
	if obs == nil {
		obs = measure.Discard
	}
	l := &Ledger{
		runID:   runID,
		obs:     obs,
		userIdx: make(map[string]uint32, len(userAddrs)),
		addrs:   append([]string(nil), userAddrs...),
		users:   make([]userState, len(userAddrs)),
	}
	for i, a := range userAddrs {
		key := strings.ToLower(a)
		if _, dup := l.userIdx[key]; !dup {
			l.userIdx[key] = uint32(i)
		}
	}
	return l
}

// Users is the number of users the ledger accounts for (the addresses
// given to New).
func (l *Ledger) Users() int { return len(l.addrs) }

// RunID is the run whose messages the ledger accounts for.
func (l *Ledger) RunID() uint32 { return l.runID }

// UserIndex returns the index of the user with address addr (case
// insensitive) among the addresses given to New.
func (l *Ledger) UserIndex(addr string) (uint32, bool) {
	i, ok := l.userIdx[strings.ToLower(addr)]
	return i, ok
}

func remoteKey(addr string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(addr)))
	return h.Sum32()
}

func (l *Ledger) ours(id string) (uint64, bool) {
	run, seq, ok := ParseID(id)
	return seq, ok && run == l.runID
}

// msg returns the record of seq, nil if that message was not accepted.
func (l *Ledger) msg(seq uint64) *msgRec {
	c := seq >> chunkBits
	if c >= uint64(len(l.msgs)) || l.msgs[c] == nil {
		return nil
	}
	m := &l.msgs[c][seq&chunkMask]
	if m.accepted == 0 {
		return nil
	}
	return m
}

func (l *Ledger) rcpt(i uint32) *rcptRec { return &l.rcpts[i>>chunkBits][i&chunkMask] }

func (l *Ledger) addRcpt(r rcptRec) {
	c := l.nRcpts >> chunkBits
	if int(c) == len(l.rcpts) {
		l.rcpts = append(l.rcpts, new([chunkSize]rcptRec))
	}
	l.rcpts[c][l.nRcpts&chunkMask] = r
	l.nRcpts++
}

// findRcpt returns m's record of the local user (remote false) or remote
// address hash (remote true) key, nil if m was not sent there.
func (l *Ledger) findRcpt(m *msgRec, remote bool, key uint32) *rcptRec {
	from, n := m.rcptStart, uint32(m.nLocal)
	if remote {
		from, n = from+uint32(m.nLocal), uint32(m.nRemote)
	}
	for i := from; i < from+n; i++ {
		if r := l.rcpt(i); r.key == key {
			return r
		}
	}
	return nil
}

// Accepted records a message the server accepted. Ids not of this run are
// ignored, and so is a second Accepted for the same id. Recipients listed
// twice count once.
func (l *Ledger) Accepted(m measure.Submission) {
	seq, ok := l.ours(m.ID)
	if !ok {
		return
	}
	at := m.Accepted
	if at.IsZero() {
		at = time.Now()
	}
	var out []measure.Observation
	l.mu.Lock()
	c := seq >> chunkBits
	for uint64(len(l.msgs)) <= c {
		l.msgs = append(l.msgs, nil)
	}
	if l.msgs[c] == nil {
		l.msgs[c] = new([chunkSize]msgRec)
	}
	rec := &l.msgs[c][seq&chunkMask]
	if rec.accepted != 0 {
		l.mu.Unlock()
		return
	}
	rec.accepted = max(at.UnixNano(), 1)
	rec.rcptStart = l.nRcpts
	for _, a := range m.Local {
		u, ok := l.UserIndex(a)
		if !ok {
			l.c.UnknownRecipients++
			continue
		}
		if rec.nLocal == 1<<16-1 || l.findRcpt(rec, false, u) != nil {
			continue
		}
		l.addRcpt(rcptRec{key: u})
		rec.nLocal++
		l.users[u].pending++
		l.c.LocalDeliveries++
	}
	for _, a := range m.Remote {
		k := remoteKey(a)
		if rec.nRemote == 1<<16-1 || l.findRcpt(rec, true, k) != nil {
			continue
		}
		l.addRcpt(rcptRec{key: k, flags: fRemote})
		rec.nRemote++
		l.c.RemoteDeliveries++
	}
	l.c.Accepted++
	l.c.AcceptedBytes += m.Size
	// Replay what was seen before this call.
	kept := l.early[:0]
	for _, e := range l.early {
		if e.seq != seq {
			kept = append(kept, e)
			continue
		}
		switch e.kind {
		case earlyLocal:
			out = l.seenLocal(rec, e.key, e.uid, e.t, e.obs, out)
		case earlyBody:
			l.bodyRead(rec, e.key, e.corrupt, e.obs)
		case earlyRemote:
			out = l.arrived(rec, e.key, e.t, e.corrupt, out)
		case earlyAnnounced:
			out = l.announced(rec, e.key, e.uid, e.t, -1, out)
		case earlyDeleted:
			l.deleted(rec, e.key)
		}
	}
	clear(l.early[len(kept):])
	l.early = kept
	l.mu.Unlock()
	l.emit(out)
}

// Rejected counts n messages the server refused at submission (every
// recipient refused, or the DATA refused).
func (l *Ledger) Rejected(n int) {
	l.mu.Lock()
	l.c.Rejected += int64(n)
	l.mu.Unlock()
}

func (l *Ledger) emit(out []measure.Observation) {
	for _, o := range out {
		l.obs.Observe(o)
	}
}

// addEarly keeps a sighting of a message not (yet) accepted. Callers hold mu.
func (l *Ledger) addEarly(e early) {
	for _, x := range l.early {
		if x.seq == e.seq && x.kind == e.kind && x.key == e.key && x.uid == e.uid && e.kind != earlyRemote {
			return // the same message seen again in the same place
		}
	}
	if len(l.early) >= maxEarly {
		stale := e.at - int64(earlyStale)
		kept := l.early[:0]
		for _, x := range l.early {
			if x.at >= stale {
				kept = append(kept, x)
			} else {
				l.c.Unexpected++
			}
		}
		clear(l.early[len(kept):])
		l.early = kept
	}
	if len(l.early) >= maxEarly {
		l.c.Unexpected++
		return
	}
	l.early = append(l.early, e)
}

// SeenLocal records messages seen in user's INBOX at observedAt, as
// returned by a range FETCH. Infos without a mailbench id of this run are
// ignored. The first sighting of a (message, user) delivery emits one
// Delivery Time (local) observation:
//
//	Start    = acceptance
//	Duration = clamp(INTERNALDATE − acceptance, 0, observedAt − acceptance)
//
// When the info has no INTERNALDATE (UID FETCH does not ask for it) the
// delivery counts as seen at once, and its time is taken from a later
// sighting that has one (a check session, the Checker), or else at Finish
// from observedAt, an upper bound. A second UID for the same delivery is a
// duplicate.
func (l *Ledger) SeenLocal(user string, infos []MessageInfo, observedAt time.Time) {
	u, ok := l.UserIndex(user)
	if !ok {
		return
	}
	var out []measure.Observation
	obsNs := observedAt.UnixNano()
	l.mu.Lock()
	for i := range infos {
		seq, ok := l.ours(infos[i].ID)
		if !ok {
			continue
		}
		var idate int64
		if t := infos[i].InternalDate; !t.IsZero() {
			idate = t.UnixNano()
		}
		m := l.msg(seq)
		if m == nil {
			l.addEarly(early{seq: seq, at: time.Now().UnixNano(), kind: earlyLocal, key: u, uid: infos[i].UID, t: idate, obs: obsNs})
			continue
		}
		out = l.seenLocal(m, u, infos[i].UID, idate, obsNs, out)
	}
	l.mu.Unlock()
	l.emit(out)
}

// seenLocal applies one INBOX sighting; idate is 0 when unknown. Callers hold mu.
func (l *Ledger) seenLocal(m *msgRec, u, uid uint32, idate, obsNs int64, out []measure.Observation) []measure.Observation {
	r := l.findRcpt(m, false, u)
	if r == nil {
		l.c.Unexpected++
		return out
	}
	if r.flags&fSeen == 0 {
		l.markSeen(r, u, uid)
		if idate == 0 {
			r.aux = sinceMs(m.accepted, obsNs)
			l.users[u].untimed++
			return out
		}
		r.flags |= fTimed
		l.c.TimedByInternalDate++
		return append(out, l.localObservation(m.accepted, internalDateDelay(m.accepted, idate, obsNs)))
	}
	switch {
	case uid == 0:
	case r.uid == 0:
		r.uid = uid
	case uid != r.uid && r.flags&fDup == 0:
		r.flags |= fDup
		l.c.Duplicated++
	}
	if r.flags&fTimed == 0 && idate != 0 {
		r.flags |= fTimed
		l.users[u].untimed--
		l.c.TimedByInternalDate++
		out = append(out, l.localObservation(m.accepted, internalDateDelay(m.accepted, idate, obsNs)))
	}
	return out
}

// markSeen makes r, a local delivery to user u not seen before, seen
// under uid: it is no longer pending, or no longer counted as deleted by
// the workload (a cleanup that reported it did not delete it after all).
// Callers hold mu.
func (l *Ledger) markSeen(r *rcptRec, u, uid uint32) {
	r.flags |= fSeen
	r.uid = uid
	if r.flags&fDeleted != 0 {
		r.flags &^= fDeleted
		l.c.DeletedByWorkload--
	} else {
		l.users[u].pending--
	}
	l.c.DeliveredLocal++
}

func sinceMs(from, to int64) uint32 {
	d := (to - from) / int64(time.Millisecond)
	return uint32(min(max(d, 0), 1<<32-1))
}

// internalDateDelay is the delivery time that an INTERNALDATE gives:
//
//	clamp(INTERNALDATE + 0.5 s − acceptance, 0, observedAt − acceptance)
//
// IMAP dates are whole seconds, truncated: the server's arrival moment is
// somewhere in [INTERNALDATE, INTERNALDATE + 1 s), so the middle of that
// second makes the error ±0.5 s instead of 0 to 1 s low. A date that has a
// fraction (not from the wire) is taken as it is.
func internalDateDelay(accepted, idate, obsNs int64) int64 {
	if idate%int64(time.Second) == 0 {
		idate += int64(time.Second) / 2
	}
	return min(max(idate-accepted, 0), max(obsNs-accepted, 0))
}

// localObservation is the Delivery Time (local) observation of a delivery
// accepted at accepted (UnixNano) and delivered d ns later; a d above the
// local limit counts the delivery late. Callers hold mu.
func (l *Ledger) localObservation(accepted, d int64) measure.Observation {
	if l.limitLocal > 0 && d > l.limitLocal {
		l.c.LateLocal++
	}
	return measure.Observation{Function: measure.DeliveryLocal, Start: time.Unix(0, accepted), Duration: time.Duration(d)}
}

// missingObservation is the Delivery Time observation of a delivery still
// missing at now: the time it has waited, a lower bound (not counted late:
// it was not found).
func missingObservation(fn measure.Function, accepted, now int64) measure.Observation {
	return measure.Observation{Function: fn, Start: time.Unix(0, accepted), Duration: time.Duration(max(now-accepted, 0))}
}

// AcceptedAt is when the server accepted the message of this run with
// the given id (X-Mailbench-Id), and whether the ledger knows it: false
// for ids of other runs, and for a message whose acceptance the ledger
// has not recorded yet. Safe for concurrent use.
func (l *Ledger) AcceptedAt(id string) (time.Time, bool) {
	seq, ok := l.ours(id)
	if !ok {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msg(seq)
	if m == nil || m.accepted == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, m.accepted), true
}

// Announced records that a watched INBOX of user announced new messages
// (an IMAP EXISTS, RFC 2177 IDLE) at the moments ats (one per info, same
// order), and what the watcher then fetched of them. It is the exact
// delivery time: the first announcement of a (message, user) delivery not
// yet timed emits its Delivery Time (local) observation with
//
//	Duration = max(announcedAt − acceptance, 0)
//
// (counted in Reconciliation.TimedByAnnouncement), and counts the
// delivery as seen. A delivery already timed by an INTERNALDATE keeps
// that time. Infos without a mailbench id of this run are ignored.
func (l *Ledger) Announced(user string, infos []MessageInfo, ats []time.Time) {
	l.announce(user, infos, ats, nil)
}

// Visible records that a watched INBOX of user returned the messages infos
// at the moments ats, after announcements that ran ahead of them (an
// EXISTS whose message the next fetch did not return yet) at the moments
// announced. Each (message, user) delivery not yet timed is timed at its
// visibility, as Announced would at the announcement, and counted in
// Reconciliation.TimedByVisibility, with the lead in AheadMaxMs. A
// delivery whose acceptance is not recorded yet is taken as announced at
// its visibility.
func (l *Ledger) Visible(user string, infos []MessageInfo, ats, announced []time.Time) {
	if len(announced) != len(infos) {
		return
	}
	l.announce(user, infos, ats, announced)
}

// announce is Announced (ahead nil) and Visible (ahead: when each message
// was announced, ahead of ats).
func (l *Ledger) announce(user string, infos []MessageInfo, ats, ahead []time.Time) {
	u, ok := l.UserIndex(user)
	if !ok || len(ats) != len(infos) {
		return
	}
	var out []measure.Observation
	l.mu.Lock()
	for i := range infos {
		seq, ok := l.ours(infos[i].ID)
		if !ok {
			continue
		}
		atNs := ats[i].UnixNano()
		m := l.msg(seq)
		if m == nil {
			l.addEarly(early{seq: seq, at: time.Now().UnixNano(), kind: earlyAnnounced, key: u, uid: infos[i].UID, t: atNs})
			continue
		}
		lead := time.Duration(-1)
		if ahead != nil {
			lead = ats[i].Sub(ahead[i])
		}
		out = l.announced(m, u, infos[i].UID, atNs, lead, out)
	}
	l.mu.Unlock()
	l.emit(out)
}

// announced applies one announcement; lead ≥ 0 says it ran that far ahead
// of the message, which atNs is the visibility of. Callers hold mu.
func (l *Ledger) announced(m *msgRec, u, uid uint32, atNs int64, lead time.Duration, out []measure.Observation) []measure.Observation {
	r := l.findRcpt(m, false, u)
	if r == nil {
		l.c.Unexpected++
		return out
	}
	if r.flags&fSeen == 0 {
		l.markSeen(r, u, uid)
	} else {
		switch {
		case uid == 0:
		case r.uid == 0:
			r.uid = uid
		case uid != r.uid && r.flags&fDup == 0:
			r.flags |= fDup
			l.c.Duplicated++
		}
		if r.flags&fTimed != 0 {
			return out
		}
		l.users[u].untimed--
	}
	r.flags |= fTimed
	if lead >= 0 {
		l.c.TimedByVisibility++
		l.c.AheadMaxMs = max(l.c.AheadMaxMs, lead.Milliseconds())
	} else {
		l.c.TimedByAnnouncement++
	}
	return append(out, l.localObservation(m.accepted, max(atNs-m.accepted, 0)))
}

// Deleted records that a cleanup session of user is about to delete (STORE
// \Deleted, then EXPUNGE) the INBOX messages infos. A delivery of this
// run among them that nothing has seen yet is counted as deleted by the
// workload (Reconciliation.DeletedByWorkload): it was delivered (the
// cleanup found it), it is not lost, and it has no delivery time. If it
// is seen after all (the deletion failed), it counts as seen instead.
func (l *Ledger) Deleted(user string, infos []MessageInfo) {
	u, ok := l.UserIndex(user)
	if !ok {
		return
	}
	l.mu.Lock()
	for i := range infos {
		seq, ok := l.ours(infos[i].ID)
		if !ok {
			continue
		}
		if m := l.msg(seq); m != nil {
			l.deleted(m, u)
		} else {
			l.addEarly(early{seq: seq, at: time.Now().UnixNano(), kind: earlyDeleted, key: u, uid: infos[i].UID})
		}
	}
	l.mu.Unlock()
}

// deleted applies one deletion by the workload. Callers hold mu.
func (l *Ledger) deleted(m *msgRec, u uint32) {
	r := l.findRcpt(m, false, u)
	if r == nil {
		l.c.Unexpected++
		return
	}
	if r.flags&(fSeen|fDeleted) != 0 {
		return
	}
	r.flags |= fDeleted
	l.users[u].pending--
	l.c.DeletedByWorkload++
}

// BodyRead checks a message body fetched from user's INBOX (FETCH
// BODY[]): when the X-Mailbench-Sum header differs from the checksum of
// the body received, it returns a *measure.IntegrityError (whatever the
// message's run, population messages included) and, for a message of this
// run, counts the delivery as corrupted (once). A body read also proves
// the delivery was seen. Messages without the header are not judged.
func (l *Ledger) BodyRead(user string, b BodyInfo) error {
	if b.Sum == "" {
		return nil
	}
	corrupt := b.Sum != b.BodySum
	var err error
	if corrupt {
		err = &measure.IntegrityError{Detail: fmt.Sprintf("message %q read from INBOX of %s: body checksum %s, sender stamped %s",
			clip(b.ID), clip(user), clip(b.BodySum), clip(b.Sum))}
	}
	u, ok := l.UserIndex(user)
	seq, ours := l.ours(b.ID)
	if !ok || !ours {
		return err
	}
	now := time.Now().UnixNano()
	l.mu.Lock()
	if m := l.msg(seq); m != nil {
		l.bodyRead(m, u, corrupt, now)
	} else {
		l.addEarly(early{seq: seq, at: now, kind: earlyBody, key: u, corrupt: corrupt, obs: now})
	}
	l.mu.Unlock()
	return err
}

func clip(s string) string {
	const n = 80
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// bodyRead applies one body read. Callers hold mu.
func (l *Ledger) bodyRead(m *msgRec, u uint32, corrupt bool, obsNs int64) {
	r := l.findRcpt(m, false, u)
	if r == nil {
		l.c.Unexpected++
		return
	}
	if r.flags&fSeen == 0 {
		l.seenLocal(m, u, 0, 0, obsNs, nil)
	}
	if corrupt && r.flags&fCorrupt == 0 {
		r.flags |= fCorrupt
		l.c.Corrupted++
	}
}

// ArrivedRemote records a message the sink accepted (smtpsink's
// Options.OnMessage hook): for each of its recipients, the first arrival
// emits one Delivery Time (remote) observation, Start = acceptance,
// Duration = Arrival.Received − acceptance (negative clamped to 0); a
// second arrival is a duplicate; a body checksum that differs from the
// stamped one makes the delivery corrupted. Arrivals of other runs, and of
// recipients the message was not sent to (counted as Unexpected), are
// otherwise ignored. It is fast enough to call before the sink's 250.
func (l *Ledger) ArrivedRemote(a Arrival) {
	seq, ok := l.ours(a.ID)
	if !ok {
		return
	}
	corrupt := a.Sum != "" && a.Sum != a.BodySum
	recv := a.Received.UnixNano()
	var out []measure.Observation
	l.mu.Lock()
	m := l.msg(seq)
	for _, to := range a.Recipients {
		k := remoteKey(to)
		if m == nil {
			l.addEarly(early{seq: seq, at: time.Now().UnixNano(), kind: earlyRemote, key: k, t: recv, corrupt: corrupt})
			continue
		}
		out = l.arrived(m, k, recv, corrupt, out)
	}
	l.mu.Unlock()
	l.emit(out)
}

// arrived applies one sink arrival for one recipient. Callers hold mu.
func (l *Ledger) arrived(m *msgRec, key uint32, recv int64, corrupt bool, out []measure.Observation) []measure.Observation {
	r := l.findRcpt(m, true, key)
	if r == nil {
		l.c.Unexpected++
		return out
	}
	if corrupt && r.flags&fCorrupt == 0 {
		r.flags |= fCorrupt
		l.c.Corrupted++
	}
	if r.flags&fSeen != 0 {
		if r.flags&fDup == 0 {
			r.flags |= fDup
			l.c.Duplicated++
		}
		return out
	}
	r.flags |= fSeen
	l.c.RelayedRemote++
	d := max(recv-m.accepted, 0)
	if l.limitRemote > 0 && d > l.limitRemote {
		l.c.LateRemote++
	}
	return append(out, measure.Observation{Function: measure.DeliveryRemote, Start: time.Unix(0, m.accepted),
		Duration: time.Duration(d)})
}

// Pending returns how many accepted local deliveries to user have not been
// seen yet (0 for an unknown user).
func (l *Ledger) Pending(user string) int {
	u, ok := l.UserIndex(user)
	if !ok {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.users[u].pending)
}

// PendingTotal returns how many accepted local deliveries have not been
// seen yet, and how many were seen but not yet timed by an INTERNALDATE.
func (l *Ledger) PendingTotal() (unseen, untimed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.users {
		unseen += int64(s.pending)
		untimed += int64(s.untimed)
	}
	return unseen, untimed
}

// RemoteLeft returns the remote deliveries that have not arrived yet.
func (l *Ledger) RemoteLeft() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.RemoteDeliveries - l.c.RelayedRemote
}

// NeedsCheck reports whether user i has deliveries unseen or untimed.
func (l *Ledger) NeedsCheck(i int) (need, untimed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.users[i]
	return s.pending > 0 || s.untimed > 0, s.untimed > 0
}

// Looked records that the INBOX of user was looked through successfully
// at at (the delivery checker's complete look: every message it had not
// seen yet): an unseen delivery accepted before then was looked for. Safe
// for concurrent use.
func (l *Ledger) Looked(user string, at time.Time) {
	u, ok := l.UserIndex(user)
	if !ok {
		return
	}
	l.mu.Lock()
	l.users[u].looked = max(l.users[u].looked, at.UnixNano())
	l.mu.Unlock()
}

// SetExternalSink says that remote mail reaches a sink in another process:
// its deliveries not seen at Finish are pending (ReconcileExternal), not
// missing. Call it before Finish.
func (l *Ledger) SetExternalSink() {
	l.mu.Lock()
	l.external = true
	l.mu.Unlock()
}

// Finish ends the accounting: every local delivery seen but never timed by
// an INTERNALDATE gets its Delivery Time (local) observation now, with the
// time of its first sighting as an upper bound (counted in
// Reconciliation.TimedByObservation). Every delivery still missing (local:
// looked for and not found, remote: not arrived at this run's sink) gets a
// Delivery Time observation of the time it has waited so far, a lower
// bound above its limit: not delivered within the limit, it counts as non-compliant in
// its row. Later sightings still count but emit nothing. Call it after the
// settle phase and before the recorder closes; calls after the first do
// nothing.
func (l *Ledger) Finish() {
	var out []measure.Observation
	l.mu.Lock()
	if l.finished {
		l.mu.Unlock()
		return
	}
	l.finished = true
	now := time.Now().UnixNano()
	for m := range l.acceptedMsgs() {
		for j := m.rcptStart; j < m.rcptStart+uint32(m.nLocal); j++ {
			r := l.rcpt(j)
			if l.missingLocal(m, r) {
				out = append(out, missingObservation(measure.DeliveryLocal, m.accepted, now))
				continue
			}
			if r.flags&(fSeen|fTimed) != fSeen {
				continue
			}
			r.flags |= fTimed
			l.users[r.key].untimed--
			l.c.TimedByObservation++
			out = append(out, l.localObservation(m.accepted, int64(r.aux)*int64(time.Millisecond)))
		}
		if l.external {
			continue
		}
		for j := m.rcptStart + uint32(m.nLocal); j < m.rcptStart+uint32(m.nLocal)+uint32(m.nRemote); j++ {
			if l.rcpt(j).flags&fSeen == 0 {
				out = append(out, missingObservation(measure.DeliveryRemote, m.accepted, now))
			}
		}
	}
	l.mu.Unlock()
	l.emit(out)
}

// Outstanding returns how many accepted deliveries, local and remote, have
// not been found yet (local: neither seen nor deleted by the workload;
// remote: not arrived at the sink), and the moment the last of their
// delivery limits passes (the latest acceptance among them plus its
// limit; zero when n is 0). Settling can stop at that moment: what is
// still not found then is missing (or unverified), and what turns up later would be late.
// With an external sink (SetExternalSink) remote deliveries are not
// counted: this run cannot see them arrive, and waiting would not help.
func (l *Ledger) Outstanding() (n int64, due time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last int64
	for m := range l.acceptedMsgs() {
		for j := m.rcptStart; j < m.rcptStart+uint32(m.nLocal)+uint32(m.nRemote); j++ {
			r := l.rcpt(j)
			if r.flags&(fSeen|fDeleted) != 0 || l.external && r.flags&fRemote != 0 {
				continue
			}
			n++
			limit := l.limitLocal
			if r.flags&fRemote != 0 {
				limit = l.limitRemote
			}
			last = max(last, m.accepted+limit)
		}
	}
	if n == 0 {
		return 0, time.Time{}
	}
	return n, time.Unix(0, last)
}

// unverified counts the local deliveries not found whose INBOX the checker
// never looked through after their acceptance. Callers hold mu.
func (l *Ledger) unverified() int64 {
	var n int64
	for m := range l.acceptedMsgs() {
		for j := m.rcptStart; j < m.rcptStart+uint32(m.nLocal); j++ {
			if r := l.rcpt(j); r.flags&(fSeen|fDeleted) == 0 && !l.missingLocal(m, r) {
				n++
			}
		}
	}
	return n
}

// acceptedMsgs yields every accepted message's record. Callers hold mu.
func (l *Ledger) acceptedMsgs() iter.Seq[*msgRec] {
	return func(yield func(*msgRec) bool) {
		for _, ch := range l.msgs {
			if ch == nil {
				continue
			}
			for i := range ch {
				if m := &ch[i]; m.accepted != 0 && !yield(m) {
					return
				}
			}
		}
	}
}

// missingLocal reports whether local delivery r of m is missing: not seen,
// not deleted by the workload, and looked for (the checker looked through
// the INBOX after the acceptance). Not seen and not looked for is
// unverified. Callers hold mu.
func (l *Ledger) missingLocal(m *msgRec, r *rcptRec) bool {
	return r.flags&(fSeen|fDeleted) == 0 && l.users[r.key].looked >= m.accepted
}

// Reconcile returns the counts so far. Lost is what is still unseen: call it
// after ramp-down, the settle phase and Finish for the final figures.
func (l *Ledger) Reconcile() Reconciliation {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.c
	r.Sent = r.Accepted + r.Rejected
	r.Unverified = l.unverified()
	r.LostLocal = r.LocalDeliveries - r.DeliveredLocal - r.DeletedByWorkload - r.Unverified
	r.Late = r.LateLocal + r.LateRemote
	r.LostRemote = r.RemoteDeliveries - r.RelayedRemote
	r.Lost = r.LostLocal + r.LostRemote
	r.Unexpected += int64(len(l.early))
	if r.Lost > 0 {
		r.MissingSample = l.missingSample(r.LostRemote > 0)
	}
	return r
}

// missingSample returns the first MissingSampleSize missing deliveries,
// earliest accepted first: local ones as missingLocal says, and, when
// remote is set, remote ones that never arrived. Callers hold mu.
func (l *Ledger) missingSample(remote bool) []MissingDelivery {
	var out []MissingDelivery
	for c, ch := range l.msgs {
		if ch == nil {
			continue
		}
		for i := range ch {
			m := &ch[i]
			if m.accepted == 0 {
				continue
			}
			if len(out) == MissingSampleSize && m.accepted > out[len(out)-1].Accepted.UnixNano() {
				continue // later than every one kept
			}
			seq := uint64(c)<<chunkBits | uint64(i)
			for j := m.rcptStart; j < m.rcptStart+uint32(m.nLocal)+uint32(m.nRemote); j++ {
				r := l.rcpt(j)
				md := MissingDelivery{Accepted: time.Unix(0, m.accepted).UTC()}
				switch {
				case r.flags&fRemote == 0 && l.missingLocal(m, r):
					md.Recipient = l.addrs[r.key]
				case r.flags&fRemote != 0 && remote && r.flags&fSeen == 0:
					md.Remote = true
				default:
					continue
				}
				md.ID = NewID(l.runID, seq)
				out = addMissing(out, []MissingDelivery{md})
			}
		}
	}
	return out
}
