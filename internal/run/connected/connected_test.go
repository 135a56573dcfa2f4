package connected

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	imap "github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/workload"
)

// server is an in-memory IMAP server on a memnet address that records,
// per user, when each login and each IDLE happened.
type server struct {
	// hideFor, when set, keeps each new message out of FETCH results for
	// that long after it was appended, while its EXISTS goes out at once:
	// an announcement ahead of the message.
	hideFor  time.Duration
	appended []time.Time // per sequence number, when the message was appended (hideFor only)

	mu     sync.Mutex
	logins map[string][]time.Time
	idles  map[string][]time.Time
	users  map[string]*imapmemserver.User
	conns  []net.Conn
}

// dropAll closes every connection the server accepted, as a server that
// restarts does; it goes on listening.
func (s *server) dropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

type trackingListener struct {
	net.Listener
	s *server
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.s.mu.Lock()
		l.s.conns = append(l.s.conns, c)
		l.s.mu.Unlock()
	}
	return c, err
}

type recordingSession struct {
	imapserver.Session
	s    *server
	user string
}

func (r *recordingSession) Login(user, pw string) error {
	if err := r.Session.Login(user, pw); err != nil {
		return err
	}
	r.user = user
	r.s.mu.Lock()
	r.s.logins[user] = append(r.s.logins[user], time.Now())
	r.s.mu.Unlock()
	return nil
}

func (r *recordingSession) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, options *imap.FetchOptions) error {
	if r.s.hideFor > 0 {
		if seqs, ok := numSet.(imap.SeqSet); ok {
			r.s.mu.Lock()
			visible := uint32(0)
			for i, at := range r.s.appended {
				if time.Since(at) >= r.s.hideFor {
					visible = uint32(i + 1)
				}
			}
			r.s.mu.Unlock()
			var shown imap.SeqSet
			for _, rg := range seqs {
				if rg.Start <= visible {
					shown = append(shown, imap.SeqRange{Start: rg.Start, Stop: min(rg.Stop, visible)})
				}
			}
			if len(shown) == 0 {
				return nil
			}
			numSet = shown
		}
	}
	return r.Session.Fetch(w, numSet, options)
}

func (r *recordingSession) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	r.s.mu.Lock()
	r.s.idles[r.user] = append(r.s.idles[r.user], time.Now())
	r.s.mu.Unlock()
	return r.Session.Idle(w, stop)
}

func startServer(t *testing.T, nw *memnet.Network, users []workload.User) *server {
	s := &server{logins: map[string][]time.Time{}, idles: map[string][]time.Time{}, users: map[string]*imapmemserver.User{}}
	mem := imapmemserver.New()
	for _, u := range users {
		mu := imapmemserver.NewUser(u.Login, u.Password)
		if err := mu.Create("INBOX", nil); err != nil {
			t.Fatal(err)
		}
		mem.AddUser(mu)
		s.users[u.Login] = mu
	}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &recordingSession{Session: mem.NewSession(), s: s}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIdle: {}},
		InsecureAuth: true,
		Logger:       quietLogger{},
	})
	ln, err := nw.Listen(context.Background(), "tcp", "imap.test:143")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(trackingListener{ln, s})
	t.Cleanup(func() { srv.Close() })
	return s
}

func testUsers(n int) []workload.User {
	var us []workload.User
	for i := range n {
		us = append(us, workload.User{Login: fmt.Sprintf("u%d", i), Password: "pw", Address: fmt.Sprintf("u%d@local.test", i)})
	}
	return us
}

// TestRampAndRenew: four clients connect 2 s apart over an 8 s ramp, each
// stays connected for the hour and renews its IDLE every 25 minutes (at 0,
// 25 and 50 minutes), and all log out when the run ends.
func TestRampAndRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New()
		users := testUsers(4)
		srv := startServer(t, nw, users)
		p := New(Config{
			IMAP:  imapclient.Config{Address: "imap.test:143", DialContext: nw.DialContext, Timeout: 10 * time.Second},
			Users: users, Ramp: 8 * time.Second, Renew: 25 * time.Minute, Seed: 1,
		})
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		done := make(chan struct{})
		go func() { p.Run(ctx, start); close(done) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if st := p.Stats(); st.Connected != 4 || st.Connects != 4 {
			t.Errorf("after the ramp: %+v, want 4 connected", st)
		}
		<-done
		st := p.Stats()
		if st.Connected != 0 || st.Reconnects != 0 || st.Idles != 12 || len(st.Drops) != 0 {
			t.Errorf("after the hour: %+v, want 12 IDLEs, none connected, no drop", st)
		}
		for i, u := range users {
			logins, idles := srv.logins[u.Login], srv.idles[u.Login]
			if len(logins) != 1 || logins[0].Sub(start) != time.Duration(i)*2*time.Second {
				t.Errorf("%s logged in at %v, want once at %v", u.Login, logins, time.Duration(i)*2*time.Second)
			}
			if len(idles) != 3 || idles[1].Sub(idles[0]) != 25*time.Minute || idles[2].Sub(idles[1]) != 25*time.Minute {
				t.Errorf("%s: IDLEs at %v, want every 25 minutes", u.Login, idles)
			}
		}
	})
}

// TestBackoff: a client whose connects fail waits [d/2, d) between
// attempts, d doubling from 1 s up to 8 s, and counts every failure.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var attempts []time.Time
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			attempts = append(attempts, time.Now())
			mu.Unlock()
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		p := New(Config{
			IMAP:  imapclient.Config{Address: "imap.test:143", DialContext: dial, Timeout: 10 * time.Second},
			Users: testUsers(1), BackoffMin: time.Second, BackoffMax: 8 * time.Second, Seed: 3,
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p.Run(ctx, time.Now())
		d := time.Second
		for i := 1; i < len(attempts); i++ {
			if gap := attempts[i].Sub(attempts[i-1]); gap < d/2 || gap >= d {
				t.Errorf("wait %d: %v, want in [%v, %v)", i, gap, d/2, d)
			}
			d = min(2*d, 8*time.Second)
		}
		st := p.Stats()
		if len(attempts) < 8 || st.Attempts != int64(len(attempts)) || st.Drops["connection"] != st.Attempts || st.Connects != 0 {
			t.Errorf("%d attempts in a minute, stats %+v", len(attempts), st)
		}
	})
}

// TestNewMailAndReconnect: mail delivered to a waiting client's INBOX is
// announced (OnExists) and fetched; a client the server drops reconnects
// after its backoff, and the drop is counted.
func TestNewMailAndReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New()
		users := testUsers(1)
		srv := startServer(t, nw, users)
		var mu sync.Mutex
		var told []uint32
		p := New(Config{
			IMAP:  imapclient.Config{Address: "imap.test:143", DialContext: nw.DialContext, Timeout: 10 * time.Second},
			Users: users, Seed: 1,
			OnExists: func(user string, n uint32, at time.Time) {
				mu.Lock()
				told = append(told, n)
				mu.Unlock()
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan struct{})
		go func() { p.Run(ctx, time.Now()); close(done) }()
		time.Sleep(time.Second)
		synctest.Wait()
		msg := []byte("From: a@remote.test\r\nTo: u0@local.test\r\nSubject: hi\r\n\r\nHello.\r\n")
		if _, err := srv.users["u0"].Append("INBOX", literal{bytes.NewReader(msg), int64(len(msg))}, &imap.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		if len(told) == 0 || told[len(told)-1] != 1 {
			t.Errorf("EXISTS announced %v, want 1", told)
		}
		mu.Unlock()
		if st := p.Stats(); st.Idles < 2 {
			t.Errorf("stats %+v: the client did not go back to IDLE after fetching", st)
		}
		srv.dropAll()
		time.Sleep(5 * time.Second) // more than the first backoff (under 1 s)
		synctest.Wait()
		if st := p.Stats(); st.Connected != 1 || st.Reconnects != 1 || st.Drops["closed"] != 1 {
			t.Errorf("after the server dropped the client: %+v, want it reconnected once, one drop", st)
		}
		<-done
	})
}

type literal struct {
	*bytes.Reader
	size int64
}

func (l literal) Size() int64 { return l.size }

// quietLogger drops the server's reports of connections the test closed.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// TestAnnouncementAheadOfTheMessage: a server that announces a new message
// (EXISTS) 300 ms before FETCH returns it: the client looks again until it
// can fetch it, reports it as visible then, not at the announcement, and
// reads it.
func TestAnnouncementAheadOfTheMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lead = 300 * time.Millisecond
		nw := memnet.New()
		users := testUsers(1)
		srv := startServer(t, nw, users)
		srv.hideFor = lead
		var mu sync.Mutex
		var announced, visible []time.Duration // after the append
		var appendedAt time.Time
		p := New(Config{
			IMAP:  imapclient.Config{Address: "imap.test:143", DialContext: nw.DialContext, Timeout: 10 * time.Second},
			Users: users, Seed: 1, Renew: time.Hour,
			OnNewMail: func(_ workload.User, infos []delivery.MessageInfo, at time.Time) {
				mu.Lock()
				announced = append(announced, at.Sub(appendedAt))
				mu.Unlock()
			},
			OnVisible: func(_ workload.User, infos []delivery.MessageInfo, at, _ time.Time) {
				mu.Lock()
				for range infos {
					visible = append(visible, at.Sub(appendedAt))
				}
				mu.Unlock()
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan struct{})
		go func() { p.Run(ctx, time.Now()); close(done) }()
		time.Sleep(time.Second)
		synctest.Wait()
		msg := []byte("From: a@remote.test\r\nTo: u0@local.test\r\nSubject: hi\r\n\r\nHello.\r\n")
		srv.mu.Lock()
		appendedAt = time.Now()
		srv.appended = append(srv.appended, appendedAt)
		srv.mu.Unlock()
		if _, err := srv.users["u0"].Append("INBOX", literal{bytes.NewReader(msg), int64(len(msg))}, &imap.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		mu.Lock()
		if len(announced) != 0 || len(visible) != 1 || visible[0] < lead || visible[0] > lead+25*time.Millisecond {
			t.Errorf("reported as announced %v, as visible %v: want it visible once, %v after its append and a little", announced, visible, lead)
		}
		mu.Unlock()
		if st := p.Stats(); st.Ahead != 1 {
			t.Errorf("stats %+v: want 1 message ahead", st)
		}
		cancel()
		<-done
	})
}
