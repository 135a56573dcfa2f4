package demo

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

func TestContentionDelay(t *testing.T) {
	c := Contention{Knee: 3, Slope: 2 * time.Second}
	for _, tc := range []struct {
		active int
		want   time.Duration
	}{{0, 0}, {1, 0}, {3, 0}, {4, 2 * time.Second}, {5, 4 * time.Second}, {33, maxLatency}, {1 << 40, maxLatency}} {
		if got := c.Delay(tc.active); got != tc.want {
			t.Errorf("Delay(%d) = %v, want %v", tc.active, got, tc.want)
		}
	}
	step := Contention{Knee: 3, Slope: 6 * time.Second, Max: 6 * time.Second}
	for _, active := range []int{4, 5, 100} {
		if got := step.Delay(active); got != 6*time.Second {
			t.Errorf("step: Delay(%d) = %v, want 6s", active, got)
		}
	}
	if got := step.Delay(3); got != 0 {
		t.Errorf("step: Delay(3) = %v, want 0", got)
	}
	if got := (Contention{Knee: 0}).Delay(100); got != 0 {
		t.Errorf("zero slope: Delay(100) = %v, want 0 (off)", got)
	}
	if got := (Contention{Knee: 0, Slope: time.Millisecond}).Delay(1); got != time.Millisecond {
		t.Errorf("knee 0: Delay(1) = %v, want 1ms", got)
	}
	for _, bad := range []Contention{{Knee: -1, Slope: time.Second}, {Knee: 1, Slope: -time.Second}, {Slope: time.Second, Max: -time.Second}, {Slope: time.Second, Max: 2 * time.Minute}} {
		if _, err := Start(context.Background(), Options{Users: testUsers, Contention: bad}); err == nil {
			t.Errorf("Start with contention %+v: no error", bad)
		}
	}
}

// contentionUsers are enough users for one IMAP session each.
func contentionUsers(n int) []workload.User {
	us := make([]workload.User, n)
	for i := range us {
		us[i] = workload.User{Login: "u" + string(rune('a'+i)), Password: "pw"}
	}
	return us
}

// A target with a knee of 2 sessions and a slope of 3 s, in a synctest
// bubble over memnet (the waits are fake time): each command's reply comes
// max(0, active−2) × 3 s late, with active the IMAP connections and SMTP
// sessions in progress; LOGIN is delayed like the others, SMTP's EHLO is
// not. Sessions that end are counted out.
func TestContentionGrowsWithActiveSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New()
		tg, err := Start(context.Background(), Options{
			Listen: nw.Listen, Users: contentionUsers(5),
			Contention: Contention{Knee: 2, Slope: 3 * time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		ctx := context.Background()
		icfg := imapclient.Config{Address: tg.IMAPAddr(), DialContext: nw.DialContext, Timeout: 2 * time.Minute}
		var clients []*imapclient.Client
		// connect logs in as session k (1-based) and returns how long the
		// LOGIN and a SELECT took.
		connect := func(k int) (login, sel time.Duration) {
			t.Helper()
			t0 := time.Now()
			c, err := imapclient.Connect(ctx, icfg, contentionUsers(5)[k-1].Login, "pw")
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
			// Closed before the bubble ends: a client whose caller reads
			// ends its read loop in Close (not when the server hangs up).
			t.Cleanup(func() { c.Close() })
			login = time.Since(t0)
			t0 = time.Now()
			if _, err := c.SelectInbox(ctx); err != nil {
				t.Fatal(err)
			}
			return login, time.Since(t0)
		}
		for k, want := range []time.Duration{0, 0, 3 * time.Second, 6 * time.Second} {
			login, sel := connect(k + 1)
			if login != want || sel != want {
				t.Errorf("session %d: LOGIN took %v, SELECT %v; want %v each", k+1, login, sel, want)
			}
			if got := tg.Active(); got != k+1 {
				t.Errorf("after session %d: Active() = %d", k+1, got)
			}
		}
		// An SMTP session is a session too: with 4 IMAP sessions it is the
		// 5th, so MAIL, RCPT and DATA wait 9 s each.
		sc, err := smtpclient.Connect(ctx, smtpclient.Config{Address: tg.SMTPAddr(), DialContext: nw.DialContext, Timeout: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if got := tg.Active(); got != 5 {
			t.Errorf("with an SMTP session: Active() = %d, want 5", got)
		}
		t0 := time.Now()
		msg := bytes.NewReader([]byte("Subject: contention\r\n\r\nbody\r\n"))
		if _, err := sc.Send(ctx, "a@example.test", []string{"ua@" + DefaultLocalDomain}, msg); err != nil {
			t.Fatal(err)
		}
		if got, want := time.Since(t0), 27*time.Second; got != want {
			t.Errorf("SMTP transaction as the 5th session: %v, want %v (MAIL, RCPT, DATA × 9 s)", got, want)
		}
		_ = sc.Quit(ctx)
		sc.Close()
		// Sessions that end are counted out: with two IMAP sessions left,
		// a command is at the knee again.
		for _, c := range clients[2:] {
			_ = c.Logout(ctx)
			c.Close()
		}
		synctest.Wait()
		if got := tg.Active(); got != 2 {
			t.Fatalf("after 3 sessions ended: Active() = %d, want 2", got)
		}
		t0 = time.Now()
		if _, err := clients[0].SelectInbox(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d != 0 {
			t.Errorf("at the knee again: SELECT took %v, want 0", d)
		}
		st := tg.Stats()
		if st.PeakActive != 5 || st.Contended != 2+2+3 {
			t.Errorf("Stats: PeakActive %d (want 5), Contended %d (want 7)", st.PeakActive, st.Contended)
		}
	})
}

// A client that goes away while its FETCH waits: the response fails
// halfway through the message, which in go-imap's imapserver leaks the
// connection's write lock (imapmemserver returns without closing the
// message writer). The target's connection then discards the rest and
// closes, so the session ends — inside synctest the clock would otherwise
// stop for good.
func TestSessionEndsWhenClientLeavesDuringFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New()
		big := append([]byte("Subject: big\r\n\r\n"), bytes.Repeat([]byte("0123456789abcdef\r\n"), 4096)...)
		tg, err := Start(context.Background(), Options{
			Listen: nw.Listen, Users: contentionUsers(1),
			Populate: func(u workload.User, mailbox string, add func([]byte, time.Time) error) error {
				if mailbox != "INBOX" {
					return nil
				}
				return add(big, time.Now())
			},
			Contention: Contention{Knee: 0, Slope: time.Second, Max: time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		c, err := nw.DialContext(context.Background(), "tcp", tg.IMAPAddr())
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for _, cmd := range []string{"", "a LOGIN ua pw\r\n", "b SELECT INBOX\r\n"} {
			if cmd != "" {
				if _, err := c.Write([]byte(cmd)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Read(buf); err != nil { // the greeting, or the reply (one read is enough for its tagged line here)
				t.Fatal(err)
			}
			synctest.Wait()
			for c.SetReadDeadline(time.Now()) == nil {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			c.SetReadDeadline(time.Time{})
		}
		if _, err := c.Write([]byte("c FETCH 1 BODY[]\r\n")); err != nil {
			t.Fatal(err)
		}
		c.Close()
		time.Sleep(2 * time.Second) // the FETCH's wait, then its failing response
		synctest.Wait()
		if got := tg.Active(); got != 0 {
			t.Errorf("after the client left: Active() = %d, want 0", got)
		}
	})
}
