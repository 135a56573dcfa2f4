package connected

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// scriptedServer is an IMAP server of a few canned answers that records
// every command line a client sends: what a client profile puts on the
// wire is what these tests check. With condstore it offers CONDSTORE and
// answers SELECT with a HIGHESTMODSEQ that grows by 2 a connect; at
// existsAfter into each of the first announce IDLEs (one when 0) it
// announces one new message; a UID EXPUNGE expunges the newest.
type scriptedServer struct {
	condstore   bool
	qresync     bool // offers QRESYNC (and CONDSTORE); answers a QRESYNC SELECT with VANISHED (EARLIER)
	existsAfter time.Duration
	announce    int

	mu       sync.Mutex
	lines    []string    // every command, without its tag, in order
	at       []time.Time // when each line came
	selects  int
	messages int
	lastUID  uint32 // the newest message's UID (3 at the start)
}

func (s *scriptedServer) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

func (s *scriptedServer) serve(t *testing.T, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.conn(c)
	}
}

func (s *scriptedServer) caps() string {
	caps := "IMAP4rev1 IDLE MOVE UIDPLUS"
	if s.condstore || s.qresync {
		caps += " CONDSTORE"
	}
	if s.qresync {
		caps += " ENABLE QRESYNC"
	}
	return caps
}

func (s *scriptedServer) conn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := func(format string, a ...any) { fmt.Fprintf(c, format+"\r\n", a...) }
	w("* OK [CAPABILITY %s] scripted", s.caps())
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		tag, cmd, _ := strings.Cut(line, " ")
		s.mu.Lock()
		s.lines = append(s.lines, cmd)
		s.at = append(s.at, time.Now())
		s.mu.Unlock()
		verb := strings.ToUpper(strings.Fields(cmd + " x")[0])
		if verb == "UID" {
			verb += " " + strings.ToUpper(strings.Fields(cmd)[1])
		}
		switch verb {
		case "CAPABILITY":
			w("* CAPABILITY %s", s.caps())
			w("%s OK done", tag)
		case "ENABLE":
			w("* ENABLED QRESYNC")
			w("%s OK enabled", tag)
		case "LOGIN":
			w("%s OK [CAPABILITY %s] logged in", tag, s.caps())
		case "SELECT":
			s.mu.Lock()
			s.selects++
			if s.messages == 0 {
				s.messages, s.lastUID = 3, 3
			}
			n, next, modseq := s.messages, s.lastUID+1, 5+2*s.selects
			s.mu.Unlock()
			w("* %d EXISTS", n)
			w("* FLAGS (\\Seen \\Answered \\Flagged \\Deleted)")
			w("* OK [UIDVALIDITY 1] ok")
			w("* OK [UIDNEXT %d] ok", next)
			if s.condstore || s.qresync {
				w("* OK [HIGHESTMODSEQ %d] ok", modseq)
			}
			if strings.Contains(cmd, "(QRESYNC (") {
				w("* VANISHED (EARLIER) 1")
				w("* %d FETCH (UID %d FLAGS (\\Seen) MODSEQ (%d))", n, next-1, modseq)
			}
			w("%s OK [READ-WRITE] selected", tag)
		case "FETCH", "UID FETCH":
			s.mu.Lock()
			n, uid := s.messages, s.lastUID
			s.mu.Unlock()
			id := fmt.Sprintf("r00000001-%012d@mailbench", uid)
			hdr := "Message-Id: <" + id + ">\r\n\r\n"
			w("* %d FETCH (UID %d FLAGS () RFC822.SIZE 100 BODY[HEADER.FIELDS (MESSAGE-ID)] {%d}\r\n%s)", n, uid, len(hdr), hdr)
			w("%s OK fetched", tag)
		case "IDLE":
			w("+ idling")
			done := make(chan bool, 1)
			go func() {
				l, err := r.ReadString('\n')
				done <- err == nil && strings.TrimSpace(l) == "DONE"
			}()
			var ok bool
			s.mu.Lock()
			announce := s.existsAfter > 0 && s.announce >= 0
			s.mu.Unlock()
			if announce {
				select {
				case ok = <-done: // left before the news: none given
				case <-time.After(s.existsAfter):
					s.mu.Lock()
					s.messages++
					s.lastUID++
					n := s.messages
					if s.announce--; s.announce == 0 {
						s.announce = -1
					}
					s.mu.Unlock()
					w("* %d EXISTS", n)
					ok = <-done
				}
			} else {
				ok = <-done
			}
			if !ok {
				return
			}
			s.mu.Lock()
			s.lines = append(s.lines, "DONE")
			s.at = append(s.at, time.Now())
			s.mu.Unlock()
			w("%s OK idle done", tag)
		case "LOGOUT":
			w("* BYE bye")
			w("%s OK bye", tag)
			return
		case "STATUS":
			w("* STATUS %s (MESSAGES 1 UNSEEN 0 UIDNEXT 2)", strings.Fields(cmd)[1])
			w("%s OK status", tag)
		case "UID EXPUNGE":
			s.mu.Lock()
			n := s.messages
			s.messages--
			s.mu.Unlock()
			w("* %d EXPUNGE", n)
			w("%s OK expunged", tag)
		default: // NOOP, UID STORE, UID MOVE, EXPUNGE
			w("%s OK done", tag)
		}
	}
}

// profileRun runs one user of client profile cl, reading everything, for
// d, against srv; it returns the observations by function.
func profileRun(t *testing.T, srv *scriptedServer, cl workload.ClientProfile, user workload.UserProfile, d time.Duration) map[measure.Function]int {
	nw := memnet.New()
	ln, err := nw.Listen(context.Background(), "tcp", "imap.test:143")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go srv.serve(t, ln)
	var mu sync.Mutex
	seen := map[measure.Function]int{}
	obs := measure.ObserverFunc(func(o measure.Observation) {
		if o.Class != measure.OK && o.Class != measure.Cancelled {
			t.Errorf("%s failed: %v", o.Function, o.Err)
		}
		mu.Lock()
		seen[o.Function]++
		mu.Unlock()
	})
	p := New(Config{
		IMAP:    imapclient.Config{Address: "imap.test:143", DialContext: nw.DialContext, Timeout: 10 * time.Second, Observer: obs},
		Folders: []string{"Sent", "Drafts", "Trash", "Archive"}, MoveTo: []string{"Archive"}, Seed: 1,
		Groups:   []Group{{Name: "test", User: user, Client: cl, Users: testUsers(1)}},
		Observer: obs,
	})
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p.Run(ctx, time.Now())
	synctest.Wait()
	return seen
}

func mustItems(t *testing.T, s string) workload.FetchItems {
	l, err := workload.ParseFetchItems(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A reader who opens, flags and deletes every message, at once.
var eagerUser = workload.UserProfile{Name: "eager", Read: 1, Flagged: 1, Deleted: 1, Day: 8 * time.Hour}

// TestProfileCondStore: against a server with CONDSTORE, a mobile-like
// client selects with (CONDSTORE), asks MODSEQ in its lists, and on a
// reconnect resyncs only what changed since the modseq it kept (UID FETCH
// … (CHANGEDSINCE n)); told of new mail in IDLE it fetches its fetch_new
// list, opens the message and flags and deletes it, each a Client row.
func TestProfileCondStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &scriptedServer{condstore: true, existsAfter: time.Second, announce: 2}
		cl := workload.ClientProfile{Name: "m", Connections: 1, Idle: true, Resync: workload.ResyncAuto, ResyncWindow: 2, ListMessages: 2,
			FetchList: mustItems(t, "UID FLAGS MODSEQ"), FetchNew: mustItems(t, "UID FLAGS MODSEQ BODY.PEEK[HEADER.FIELDS (Message-ID)]"),
			FetchOpen: mustItems(t, "BODY.PEEK[]"), Online: 10 * time.Second, Offline: 5 * time.Second}
		seen := profileRun(t, srv, cl, eagerUser, time.Minute)
		got := normalise(srv.commands())
		// In this order, other commands between them.
		want := []string{
			`LOGIN "u0" "pw"`, "SELECT INBOX (CONDSTORE)",
			"UID FETCH 2:* (UID FLAGS)", // the first resync: the window's flags
			"FETCH 2:3 (UID FLAGS MODSEQ)",
			"IDLE", "DONE",
			`UID FETCH 4:* (UID FLAGS MODSEQ BODY.PEEK[HEADER.FIELDS ("Message-ID")])`, // go-imap's quoting
			"UID FETCH 4 (UID BODY.PEEK[])", `UID STORE 4 +FLAGS.SILENT (\Flagged)`, `UID STORE 4 +FLAGS.SILENT (\Deleted)`, "UID EXPUNGE 4",
			"LOGOUT", `LOGIN "u0" "pw"`, "SELECT INBOX (CONDSTORE)",
		}
		if !subsequence(got, want) {
			t.Errorf("commands:\n%s\nwant, in order:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		changed := slices.ContainsFunc(got, func(l string) bool {
			return strings.HasPrefix(l, "UID FETCH ") && strings.HasSuffix(l, ":* (UID FLAGS) (CHANGEDSINCE 7)") // the reconnect: what changed since the first connect
		})
		if !changed {
			t.Errorf("no resync by CHANGEDSINCE on a reconnect:\n%s", strings.Join(got, "\n"))
		}
		for _, f := range []measure.Function{measure.ClientConnect, measure.ClientResync, measure.ClientList, measure.ClientNewMail, measure.ClientOpen, measure.ClientChange} {
			if seen[f] == 0 {
				t.Errorf("no %s observed: %v", f, seen)
			}
		}
		if seen[measure.ClientChange] < 2 {
			t.Errorf("%d Client flag/move/delete, want the flag and the delete", seen[measure.ClientChange])
		}
	})
}

// TestProfileExistsAfterExpunge: a message announced with the number of
// one the client has just expunged (* 4 EXPUNGE, then * 4 EXISTS) is new
// all the same: the client asks for what comes after the last UID it
// knows, as clients with a cache do.
func TestProfileExistsAfterExpunge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &scriptedServer{existsAfter: time.Second, announce: 2}
		cl := workload.ClientProfile{Name: "d", Connections: 1, Idle: true, Resync: workload.ResyncNone,
			FetchNew: mustItems(t, "UID ENVELOPE"), FetchOpen: mustItems(t, "BODY.PEEK[]")}
		profileRun(t, srv, cl, eagerUser, 10*time.Second)
		got := normalise(srv.commands())
		want := []string{"IDLE", "DONE", "UID FETCH 4:* (UID ENVELOPE)", "UID EXPUNGE 4", "IDLE", "DONE", "UID FETCH 5:* (UID ENVELOPE)", "UID EXPUNGE 5"}
		if !subsequence(got, want) {
			t.Errorf("commands:\n%s\nwant, in order:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// subsequence reports whether want appears in got in order.
func subsequence(got, want []string) bool {
	i := 0
	for _, l := range got {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestProfileQResync: against a server with QRESYNC the client enables it
// on every connect; its first SELECT asks CONDSTORE and fetches the
// window's flags (it has no modseq yet), every later one asks QRESYNC with
// the UIDVALIDITY and modseq it kept, reads the VANISHED (EARLIER) and
// FETCH that answer it, and fetches nothing more to resync.
func TestProfileQResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &scriptedServer{qresync: true}
		cl := workload.ClientProfile{Name: "m", Connections: 1, Idle: true, Resync: workload.ResyncAuto, ResyncWindow: 2,
			FetchNew: mustItems(t, "UID ENVELOPE"), FetchOpen: mustItems(t, "BODY.PEEK[]"), Online: 10 * time.Second, Offline: 5 * time.Second}
		seen := profileRun(t, srv, cl, eagerUser, time.Minute)
		got := normalise(srv.commands())
		want := []string{`LOGIN "u0" "pw"`, "ENABLE QRESYNC", "SELECT INBOX (CONDSTORE)", "UID FETCH 2:* (UID FLAGS)", "IDLE", "DONE", "LOGOUT",
			`LOGIN "u0" "pw"`, "ENABLE QRESYNC", "SELECT INBOX (QRESYNC (1 7))", "IDLE", "DONE", "LOGOUT",
			`LOGIN "u0" "pw"`, "ENABLE QRESYNC", "SELECT INBOX (QRESYNC (1 9))", "IDLE"}
		if !slices.Equal(got[:min(len(want), len(got))], want) {
			t.Errorf("commands:\n%s\nwant them to begin:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if n := seen[measure.ClientResync]; n < 3 {
			t.Errorf("%d Client resync on connect observed, want one a connect", n)
		}
	})
}

// TestProfileWithoutCondStore: the same client against a server without
// CONDSTORE selects plainly, resyncs by the flags of its window on every
// connect, and leaves MODSEQ out of its lists, as real clients do.
func TestProfileWithoutCondStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &scriptedServer{}
		cl := workload.ClientProfile{Name: "m", Connections: 1, Idle: true, Resync: workload.ResyncAuto, ResyncWindow: 2, ListMessages: 2,
			FetchList: mustItems(t, "UID FLAGS MODSEQ"), FetchNew: mustItems(t, "UID ENVELOPE"),
			FetchOpen: mustItems(t, "BODY[]"), Online: 10 * time.Second, Offline: 5 * time.Second}
		profileRun(t, srv, cl, eagerUser, 20*time.Second)
		got := normalise(srv.commands())
		want := []string{`LOGIN "u0" "pw"`, "SELECT INBOX", "UID FETCH 2:* (UID FLAGS)", "FETCH 2:3 (UID FLAGS)", "IDLE", "DONE", "LOGOUT",
			`LOGIN "u0" "pw"`, "SELECT INBOX", "UID FETCH 2:* (UID FLAGS)"}
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Errorf("commands:\n%s\nwant them to begin:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, l := range got {
			if strings.Contains(l, "MODSEQ") || strings.Contains(l, "CHANGEDSINCE") {
				t.Errorf("%q sent to a server without CONDSTORE", l)
			}
		}
	})
}

// TestProfileWebmail: a client without IDLE looks with NOOP every check,
// asks the other folders' STATUS every poll, each first at a point of its
// period drawn from the seed (a day under way), and an EXISTS it learns
// that way is fetched but times no notification (the delay was the
// client's).
func TestProfileWebmail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &scriptedServer{}
		cl := workload.ClientProfile{Name: "w", Connections: 1, Check: 3 * time.Second, Poll: 5 * time.Second, Resync: workload.ResyncNone,
			FetchNew: mustItems(t, "UID ENVELOPE"), FetchOpen: mustItems(t, "BODY[]")}
		var notified atomic.Int64
		nw := memnet.New()
		ln, _ := nw.Listen(context.Background(), "tcp", "imap.test:143")
		defer ln.Close()
		go srv.serve(t, ln)
		p := New(Config{
			IMAP:    imapclient.Config{Address: "imap.test:143", DialContext: nw.DialContext, Timeout: 10 * time.Second},
			Folders: []string{"Sent", "Archive"}, Seed: 1,
			Groups:    []Group{{Name: "w", User: workload.UserProfile{Day: 8 * time.Hour}, Client: cl, Users: testUsers(1)}},
			OnNewMail: func(workload.User, []delivery.MessageInfo, time.Time) { notified.Add(1) },
		})
		ctx, cancel := context.WithTimeout(context.Background(), 31*time.Second)
		defer cancel()
		p.Run(ctx, time.Now())
		synctest.Wait()
		srv.mu.Lock()
		defer srv.mu.Unlock()
		var login time.Time
		var noops, status []time.Time
		for i, l := range srv.lines {
			switch {
			case strings.HasPrefix(l, "LOGIN"):
				login = srv.at[i]
			case l == "NOOP":
				noops = append(noops, srv.at[i])
			case strings.HasPrefix(l, "STATUS \"Sent\""):
				status = append(status, srv.at[i])
			case l == "IDLE":
				t.Errorf("IDLE from a client without it")
			}
		}
		spaced := func(name string, ts []time.Time, d time.Duration, want int) {
			if len(ts) < want || len(ts) > want+1 || ts[0].Sub(login) >= d {
				t.Errorf("%s at %v after a login at %v: want %d or %d, the first within %v", name, ts, login, want, want+1, d)
				return
			}
			for i := 1; i < len(ts); i++ {
				if gap := ts[i].Sub(ts[i-1]); gap < d || gap > d+time.Millisecond {
					t.Errorf("%s %d came %v after the one before, want %v", name, i, gap, d)
				}
			}
		}
		spaced("NOOP", noops, 3*time.Second, 10)
		spaced("STATUS", status, 5*time.Second, 6) // 31 s: 10 or 11 NOOPs, 6 or 7 STATUS
		if notified.Load() != 0 {
			t.Errorf("%d notifications timed for a client without IDLE", notified.Load())
		}
	})
}

// normalise drops the CAPABILITY commands go-imap may add: the lines as
// sent otherwise.
func normalise(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l == "CAPABILITY" {
			continue
		}
		out = append(out, l)
	}
	return out
}
