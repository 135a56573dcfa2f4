package inboxcheck

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/workload"
)

// netTimeout bounds every network step of these tests.
// run is the run id of the test's messages.
const run = 0x0a0b0c0d

// t0 is the date of the populated messages.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// netTimeout bounds every network step of these tests.
const netTimeout = 5 * time.Second

// TestEndToEndFaults sends mail through the embedded target, which drops,
// duplicates and corrupts every Nth local delivery and relays remote mail
// to a sink that refuses every 4th message for good, and checks that the
// reconciliation reports exactly the injected faults.
func TestEndToEndFaults(t *testing.T) {
	const (
		nMsgs       = 30 // one local recipient each: local delivery n = message n
		dropEvery   = 7  // 7 14 21 28: 4 lost
		dupEvery    = 11 // 11 22: 2 duplicated
		corrEvery   = 13 // 13 26: 2 corrupted
		remoteEvery = 3  // messages 3, 6 … 30 also go to a remote recipient: 10
		rejectEvery = 4  // the sink refuses transfers 4 and 8 permanently: 2 lost
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tusers := make([]workload.User, 4)
	addrs := make([]string, len(tusers))
	cusers := make([]workload.User, len(tusers))
	for i := range tusers {
		tusers[i] = workload.User{Login: fmt.Sprintf("user%d", i+1), Password: fmt.Sprintf("pw-%d", i+1)}
		addrs[i] = tusers[i].Login + "@" + demo.DefaultLocalDomain
		cusers[i] = workload.User{Address: addrs[i], Login: tusers[i].Login, Password: tusers[i].Password}
	}
	var obs testutil.ObservationLog
	l := delivery.NewLedger(run, addrs, &obs)

	var amu sync.Mutex
	var arrivals []delivery.Arrival
	sink, err := smtpsink.New(smtpsink.Options{
		Addr:   "127.0.0.1:0",
		Faults: smtpsink.Faults{RejectEvery: rejectEvery, RejectPermanent: true},
		OnMessage: func(a delivery.Arrival) {
			l.ArrivedRemote(a)
			amu.Lock()
			arrivals = append(arrivals, a)
			amu.Unlock()
		},
		ReadTimeout: netTimeout, WriteTimeout: netTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Start(); err != nil {
		t.Fatal(err)
	}
	defer sink.Close()

	gen, err := message.NewGenerator(1, []int{1024, 4096})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := demo.Start(ctx, demo.Options{
		Users: tusers, RelayAddr: sink.Addr().String(), OpTimeout: netTimeout,
		Faults: demo.Faults{DropEvery: dropEvery, DuplicateEvery: dupEvery, CorruptEvery: corrEvery},
		Populate: func(u workload.User, mbox string, add func([]byte, time.Time) error) error {
			if mbox != "INBOX" {
				return nil
			}
			env := message.Envelope{ID: "init-" + u.Login + "-INBOX-1", From: "x@remote.test", To: []string{u.Login}, Sent: t0}
			return add(gen.Message(env, 1024, 0), t0)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()

	smtpCfg := smtpclient.Config{Address: tg.SMTPAddr(), Timeout: netTimeout}
	for i := 1; i <= nMsgs; i++ {
		to := []string{addrs[i%len(addrs)]}
		if i%remoteEvery == 0 {
			to = append(to, fmt.Sprintf("peer%d@remote.test", i))
		}
		env := message.Envelope{ID: delivery.NewID(run, uint64(i)), From: addrs[0], To: to, Subject: "t", Sent: time.Now()}
		sc, err := smtpclient.Connect(ctx, smtpCfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := sc.Send(ctx, env.From, env.To, bytes.NewReader(gen.Message(env, []int{1024, 4096}[i%2], uint64(i))))
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		s := measure.Submission{ID: env.ID, Accepted: time.Now()}
		for _, a := range res.Accepted {
			if strings.HasSuffix(a, "@"+demo.DefaultLocalDomain) {
				s.Local = append(s.Local, a)
			} else {
				s.Remote = append(s.Remote, a)
			}
		}
		l.Accepted(s)
		_ = sc.Quit(ctx)
		sc.Close()
	}
	// A rejected submission: an unknown local user.
	if sc, err := smtpclient.Connect(ctx, smtpCfg); err == nil {
		if _, err := sc.Send(ctx, addrs[0], []string{"nobody@" + demo.DefaultLocalDomain}, strings.NewReader("Subject: x\r\n\r\nx\r\n")); err != nil {
			l.Rejected(1)
		}
		sc.Close()
	}

	// Wait for the relay to finish with every remote recipient.
	for st := tg.Stats(); st.Relayed+st.RelayFailed < nMsgs/remoteEvery; st = tg.Stats() {
		if ctx.Err() != nil {
			t.Fatalf("relay did not finish: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}

	ch := New(l, Config{
		IMAP: imapclient.Config{Address: tg.IMAPAddr(), Timeout: netTimeout, Observer: measure.ObserverFunc(func(o measure.Observation) {
			t.Errorf("checker command timed: %s", o.Function)
		})},
		Users: cusers, Interval: 100 * time.Millisecond, Revisit: time.Hour, SettlePause: 50 * time.Millisecond,
	})
	// Run: at most one user per Interval, each user once per Revisit.
	if err := ch.Run(ctx, time.Now().Add(350*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if st := ch.Stats(); st.Checks < 1 || st.Checks > 3 || st.Errors != 0 || st.Commands > 4*st.Checks {
		t.Errorf("after Run for 3.5 intervals: %+v, want 1-3 checks, no errors, at most 4 commands each", st)
	}
	left := ch.Settle(ctx, time.Now().Add(600*time.Millisecond))
	if left != 4 {
		t.Errorf("Settle() left %d unseen, want the 4 dropped", left)
	}
	st := ch.Stats()
	if st.Errors != 0 || st.Commands > 4*st.Checks {
		t.Errorf("checker stats %+v: want no errors, at most 4 commands per check", st)
	}
	t.Logf("checker: %+v", st)

	// Read every body, as read sessions do: the corrupted ones fail.
	integrity := 0
	for _, u := range cusers {
		c, err := imapclient.Connect(ctx, imapclient.Config{Address: tg.IMAPAddr(), Timeout: netTimeout}, u.Login, u.Password)
		if err != nil {
			t.Fatal(err)
		}
		mb, err := c.SelectInbox(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint32(1); seq <= mb.Messages; seq++ {
			b, err := c.FetchBody(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.BodyRead(u.Address, b); measure.Classify(err) == measure.Integrity {
				integrity++
			}
		}
		c.Close()
	}
	if integrity != 2 {
		t.Errorf("body reads: %d integrity errors, want 2", integrity)
	}

	// A duplicate at the sink (the relay sent a message twice).
	amu.Lock()
	if len(arrivals) == 0 {
		t.Fatal("no arrival at the sink")
	}
	l.ArrivedRemote(arrivals[0])
	amu.Unlock()

	l.Finish()
	got := l.Reconcile()
	want := delivery.Reconciliation{
		Sent: nMsgs + 1, Accepted: nMsgs, Rejected: 1, AcceptedBytes: got.AcceptedBytes,
		LocalDeliveries: nMsgs, RemoteDeliveries: nMsgs / remoteEvery,
		DeliveredLocal: nMsgs - 4, RelayedRemote: nMsgs/remoteEvery - 2,
		Lost: 6, LostLocal: 4, LostRemote: 2, Duplicated: 2 + 1, Corrupted: 2,
		TimedByInternalDate: nMsgs - 4,
	}
	if n := len(got.MissingSample); n != delivery.MissingSampleSize {
		t.Errorf("MissingSample has %d entries, want %d of the 6 missing: %+v", n, delivery.MissingSampleSize, got.MissingSample)
	}
	got.MissingSample = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Reconcile() =\n%+v\nwant\n%+v", got, want)
	}
	if ts := tg.Stats(); ts.Dropped != 4 || ts.Duplicated != 2 || ts.Corrupted != 2 || ts.RelayFailed != 2 {
		t.Errorf("target stats %+v: the faults did not fire as planned", ts)
	}
	var nl, nr int
	for _, o := range obs.All() {
		switch o.Function {
		case measure.DeliveryLocal:
			nl++
		case measure.DeliveryRemote:
			nr++
		}
		if o.Duration < 0 || o.Duration > netTimeout+time.Minute {
			t.Errorf("%s observation of %v: implausible", o.Function, o.Duration)
		}
	}
	// Every delivery has one observation: the missing ones (4 local, 2
	// remote) too, with the time they waited, so that the Delivery Time rows
	// count them as not delivered within the limit.
	if nl != nMsgs || nr != nMsgs/remoteEvery {
		t.Errorf("observations: %d local, %d remote; want %d, %d", nl, nr, nMsgs, nMsgs/remoteEvery)
	}
}
