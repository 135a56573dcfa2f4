package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// sessionEnv is what every session needs; shared, read-only after setup
// except for the atomic message sequence.
type sessionEnv struct {
	cfg        *workload.Config
	users      []workload.User
	allUsers   []workload.User // every user (the population's too): recipients of Client send
	imap       imapclient.Config
	smtp       smtpclient.Config
	inboundTo  smtpclient.Config // where remote senders deliver
	gen        *message.Generator
	runID      uint32
	msgSeq     atomic.Uint64
	sizes      *workload.Weighted[int]
	rcpts      *recipientPicker
	folders    []string // folders for SELECT_FOLDER
	onSent     func(measure.Submission)
	onSeen     func(user string, infos []delivery.MessageInfo, at time.Time)
	onBodyRead func(user string, b delivery.BodyInfo) error
	onDeleted  func(user string, infos []delivery.MessageInfo)
	onRejected func()
	obs        measure.Observer
}

// sessionRand returns the reproducible random source of arrival i.
func sessionRand(seed int64, stream uint64, i int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x9e3779b97f4a7c15*stream, uint64(i)))
}

// think sleeps an exponential think time; false when ctx ended first.
func (e *sessionEnv) think(ctx context.Context, rng *rand.Rand) bool {
	mean := e.cfg.Load.ThinkTime.Duration
	if mean <= 0 {
		return ctx.Err() == nil
	}
	d := time.Duration(rng.ExpFloat64() * float64(mean))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// run executes one session of kind k for user u: the plan's steps
// (workload.SessionSteps) in order, with a think time between two steps
// (none between SMTP Connect and SMTP Data, one transaction). It returns the
// first error that ended the session early (already recorded as an
// observation by the client that met it), and whether the session's first
// connect (IMAP or SMTP, with its login) succeeded. drawn is the user the
// seed drew for the session, whom its messages are not sent to: u itself,
// unless that user was busy or another shard's.
func (e *sessionEnv) run(ctx context.Context, k workload.SessionKind, u, drawn workload.User, rng *rand.Rand) (loggedIn bool, err error) {
	return e.runSized(ctx, k, u, drawn, rng, nil)
}

// runSized is run with the message sizes of a user profile (nil:
// messages.sizes).
func (e *sessionEnv) runSized(ctx context.Context, k workload.SessionKind, u, drawn workload.User, rng *rand.Rand, sizes *workload.Weighted[int]) (loggedIn bool, err error) {
	steps := workload.SessionSteps(k)
	if len(steps) == 0 {
		return false, fmt.Errorf("unknown session kind %q", k)
	}
	sc := &script{env: e, kind: k, user: u, drawn: drawn, rng: rng, sizes: sizes}
	defer sc.close()
	return sc.run(ctx, steps)
}

func (sc *script) run(ctx context.Context, steps []workload.Step) (loggedIn bool, err error) {
	e := sc.env
	defer func() { loggedIn = sc.loggedIn }()
	for i, step := range steps {
		if i > 0 && steps[i-1].Function != measure.SMTPConnect && !e.think(ctx, sc.rng) {
			return false, ctx.Err()
		}
		if i > 0 && steps[i-1].Function == measure.IMAPConnect && hasRepeated(steps) {
			sc.drawRepeats() // once logged in, the session decides how much it reads
		}
		n := 1
		if step.Repeated {
			n = sc.repeats
		}
		for j := range n {
			if j > 0 && !e.think(ctx, sc.rng) {
				return false, ctx.Err()
			}
			if err := sc.do(ctx, step.Function); err != nil {
				if errors.Is(err, errNothingToDo) {
					sc.logout(ctx)
					return false, nil
				}
				return false, err
			}
			if i == 0 {
				sc.loggedIn = true // the first step connects and logs in
			}
		}
	}
	sc.logout(ctx)
	return false, nil
}

// script is the state of one running session: its connections, the
// mailbox it selected, the message it is sending.
type script struct {
	env  *sessionEnv
	kind workload.SessionKind
	user workload.User
	// drawn is the user the seed drew, excluded from the recipients:
	// the recipients then depend on the seed alone, not on which users
	// were busy or which shard runs the session.
	drawn   workload.User
	rng     *rand.Rand
	imap    *imapclient.Client
	mb      imapclient.Mailbox
	repeats int // how many times the Repeated step runs, drawn at login
	// loggedIn: the first step (IMAP or SMTP Connect, login included)
	// succeeded.
	loggedIn bool

	smtp    *smtpclient.Client
	sizes   *workload.Weighted[int] // the user profile's message sizes; nil: messages.sizes
	env822  message.Envelope        // the message being sent
	size    int
	variant uint64
}

// do performs the timed function f, one step of the session.
func (s *script) do(ctx context.Context, f measure.Function) error {
	e, u := s.env, s.user
	typ := e.cfg.Sessions.Type(s.kind)
	switch f {
	case measure.IMAPConnect:
		c, err := imapclient.Connect(ctx, e.imap, u.Login, u.Password)
		if err != nil {
			return err
		}
		s.imap = c
		return nil
	case measure.IMAPSelectInbox:
		mb, err := s.imap.SelectInbox(ctx)
		s.mb = mb
		if s.kind == workload.Read || s.kind == workload.Cleanup {
			return nonEmpty(mb, err) // nothing to read or clean up
		}
		return err
	case measure.IMAPSelectFolder:
		mb, err := s.imap.SelectFolder(ctx, e.folders[s.rng.IntN(len(e.folders))])
		s.mb = mb
		return err
	case measure.IMAPFetchRange:
		return e.fetchNewest(ctx, s.imap, s.mb, u, typ.FetchCount)
	case measure.IMAPUIDFetch:
		// The newest fetch_count messages by UID.
		from := uint32(1)
		if n := uint32(typ.FetchCount); s.mb.UIDNext > n {
			from = s.mb.UIDNext - n
		}
		infos, err := s.imap.UIDFetchRange(ctx, from, s.mb.UIDNext-1)
		if err == nil {
			e.noteSeen(u, infos)
		}
		return err
	case measure.IMAPFetchBody:
		return e.readBody(ctx, s.imap, u, 1+uint32(s.rng.IntN(int(s.mb.Messages))))
	case measure.IMAPStore:
		// The oldest messages go: a mailbox cleaned from the bottom keeps
		// the newest mail for check and read sessions.
		s.noteDeleting(ctx, func() ([]delivery.MessageInfo, error) { return s.imap.FetchIDs(ctx, 1, 1) })
		return s.imap.Store(ctx, 1)
	case measure.IMAPUIDStore:
		// The UID of the second oldest message is not known without an
		// extra FETCH; UID STORE on a UID below UIDNEXT is what a client
		// that cached the mailbox would send. A UID that no longer exists
		// is a valid command with no effect.
		uid := uint32(1)
		if s.mb.UIDNext > s.mb.Messages {
			uid = s.mb.UIDNext - s.mb.Messages + 1
		}
		s.noteDeleting(ctx, func() ([]delivery.MessageInfo, error) { return s.imap.UIDFetchIDs(ctx, uid, uid) })
		return s.imap.UIDStore(ctx, uid)
	case measure.IMAPExpunge:
		return s.imap.Expunge(ctx)
	case measure.IMAPList:
		_, err := s.imap.List(ctx)
		return err
	case measure.IMAPLsub:
		_, err := s.imap.Lsub(ctx)
		return err
	case measure.IMAPAppend:
		// The copy to Sent, as a mail client saves what it sent.
		msg := e.gen.Source(s.env822, s.size, s.variant) // no copy of the message; rendered before the timed span
		_, err := s.imap.AppendFrom(ctx, e.cfg.Mailboxes.Sent, msg, msg.Size(), []string{`\Seen`}, s.env822.Sent)
		return err
	case measure.SMTPConnect:
		return s.smtpConnect(ctx)
	case measure.SMTPData:
		return s.smtpData(ctx)
	}
	return fmt.Errorf("session %s: no action for step %q", s.kind, f)
}

func hasRepeated(steps []workload.Step) bool {
	for _, st := range steps {
		if st.Repeated {
			return true
		}
	}
	return false
}

// drawRepeats draws how many times the session's Repeated step runs:
// bodies_min..bodies_max (read sessions' bodies).
func (s *script) drawRepeats() {
	typ := s.env.cfg.Sessions.Type(s.kind)
	s.repeats = typ.BodiesMin
	if typ.BodiesMax > s.repeats {
		s.repeats += s.rng.IntN(typ.BodiesMax - s.repeats + 1)
	}
}

// noteDeleting tells the ledger which messages the next STORE \Deleted
// will flag, so that a delivery the workload deletes before anything saw
// it is accounted as deleted, not lost. fetch is an untimed FETCH of
// their ids (one command, not part of any timed function); when it fails,
// the session goes on, and the STORE that follows meets and records
// whatever broke.
func (s *script) noteDeleting(ctx context.Context, fetch func() ([]delivery.MessageInfo, error)) {
	if s.env.onDeleted == nil {
		return
	}
	if infos, err := fetch(); err == nil && len(infos) > 0 {
		s.env.onDeleted(s.user.Address, infos)
	}
}

// logout ends the IMAP session politely; LOGOUT is not timed.
func (s *script) logout(ctx context.Context) {
	if s.imap != nil {
		_ = s.imap.Logout(ctx)
	}
}

// close releases the session's connections.
func (s *script) close() {
	if s.imap != nil {
		s.imap.Close()
	}
	if s.smtp != nil {
		s.smtp.Close()
	}
}

// errNothingToDo ends a session script early without an error: its mailbox
// is empty, so the remaining steps have nothing to act on.
var errNothingToDo = errors.New("nothing to do")

// nonEmpty passes err on, or errNothingToDo for an empty mailbox.
func nonEmpty(mb imapclient.Mailbox, err error) error {
	if err == nil && mb.Messages == 0 {
		return errNothingToDo
	}
	return err
}

// readBody fetches one whole message and checks its integrity.
func (e *sessionEnv) readBody(ctx context.Context, c *imapclient.Client, u workload.User, seq uint32) error {
	b, err := c.FetchBody(ctx, seq)
	if err != nil || e.onBodyRead == nil {
		return err
	}
	if ierr := e.onBodyRead(u.Address, b); ierr != nil {
		// A corrupted body is an error of the read that returned it: one
		// more, failed, FETCH_NUM_BODYALL.
		e.obs.Observe(measure.Observation{Function: measure.IMAPFetchBody, Start: time.Now(),
			Class: measure.Integrity, Err: ierr})
	}
	return nil
}

// fetchNewest fetches the envelopes of the newest count messages.
func (e *sessionEnv) fetchNewest(ctx context.Context, c *imapclient.Client, mb imapclient.Mailbox, u workload.User, count int) error {
	if mb.Messages == 0 {
		return nil
	}
	n := uint32(count)
	from := uint32(1)
	if mb.Messages > n {
		from = mb.Messages - n + 1
	}
	infos, err := c.FetchRangeEnvelope(ctx, from, mb.Messages)
	if err == nil && mb.Name == "INBOX" {
		e.noteSeen(u, infos)
	}
	return err
}

func (e *sessionEnv) noteSeen(u workload.User, infos []delivery.MessageInfo) {
	if e.onSeen != nil && len(infos) > 0 {
		e.onSeen(u.Address, infos, time.Now())
	}
}

// newMessage builds the next message of this run and its envelope, its
// size drawn from sizes (nil: messages.sizes).
func (e *sessionEnv) newMessage(from string, to []string, rng *rand.Rand, sizes *workload.Weighted[int]) (message.Envelope, int, uint64) {
	if sizes == nil {
		sizes = e.sizes
	}
	seq := e.msgSeq.Add(1)
	env := message.Envelope{
		ID:      delivery.NewID(e.runID, seq),
		From:    from,
		To:      to,
		Subject: fmt.Sprintf("mailbench message %d", seq),
		Sent:    time.Now(),
	}
	return env, sizes.Pick(rng), rng.Uint64()
}

// smtpConnect draws the message this session sends (a send session: from
// its user to the recipients distribution, logged in as its user when auth
// is set; inbound mail: from a remote sender to local users) and opens the
// SMTP connection: SMTP Connect.
func (s *script) smtpConnect(ctx context.Context) error {
	e := s.env
	sc := e.smtp
	if s.kind == workload.Inbound {
		to := []string{s.user.Address} // a population user's received mail
		if s.user.Address == "" {
			to = e.rcpts.pickLocal(s.rng, e.users)
		}
		from := fmt.Sprintf("sender%d@%s", 1+s.rng.IntN(1000), e.cfg.Users.RemoteDomain)
		s.env822, s.size, s.variant = e.newMessage(from, to, s.rng, s.sizes)
		sc = e.inboundTo
	} else {
		to := e.rcpts.pick(s.rng, e.users, s.drawn)
		s.env822, s.size, s.variant = e.newMessage(s.user.Address, to, s.rng, s.sizes)
		sc.Username, sc.Password = s.user.Login, s.user.Password
	}
	c, err := smtpclient.Connect(ctx, sc)
	if err != nil {
		return err
	}
	s.smtp = c
	return nil
}

// smtpData sends the message over the open connection (SMTP Data), reports
// what the server accepted to the ledger, and quits.
func (s *script) smtpData(ctx context.Context) error {
	e, c := s.env, s.smtp
	s.env822.Sent = time.Now()
	// The header rendered now, outside Send's timed span; the body is the
	// generator's pooled one, written as is (no copy of the message).
	msg := e.gen.Source(s.env822, s.size, s.variant)
	res, err := c.Send(ctx, s.env822.From, s.env822.To, msg)
	if err != nil {
		if e.onRejected != nil && measure.Classify(err) == measure.Protocol {
			e.onRejected()
		}
		return err
	}
	e.accepted(s.env822.ID, time.Now(), msg.Size(), res.Accepted)
	_ = c.Quit(ctx)
	c.Close()
	s.smtp = nil
	return nil
}

// accepted tells the ledger what the server accepted of message id.
func (e *sessionEnv) accepted(id string, at time.Time, size int64, rcpts []string) {
	if e.onSent == nil {
		return
	}
	sm := measure.Submission{ID: id, Accepted: at, Size: size}
	for _, a := range rcpts {
		if domainOf(a) == e.cfg.Users.LocalDomain {
			sm.Local = append(sm.Local, a)
		} else {
			sm.Remote = append(sm.Remote, a)
		}
	}
	e.onSent(sm)
}

func domainOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == '@' {
			return addr[i+1:]
		}
	}
	return ""
}
