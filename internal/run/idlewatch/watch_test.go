package idlewatch

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

const (
	run        = 0x0a0b0c0d
	netTimeout = 5 * time.Second
)

func users(n int) (tusers, cusers []workload.User, addrs []string) {
	for i := range n {
		u := workload.User{Login: fmt.Sprintf("user%d", i+1), Password: fmt.Sprintf("pw-%d", i+1)}
		a := u.Login + "@" + demo.DefaultLocalDomain
		tusers = append(tusers, u)
		cusers = append(cusers, workload.User{Address: a, Login: u.Login, Password: u.Password})
		addrs = append(addrs, a)
	}
	return
}

// The watcher times deliveries to the moment the server announced them:
// with a 300 ms delivery delay injected into the embedded target, every
// watched delivery reads 300 ms and a little, not 0 or 1 s as
// INTERNALDATE would; unwatched users' deliveries are not reported.
func TestWatchTimesDeliveriesToTheMillisecond(t *testing.T) {
	const delay = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tusers, cusers, addrs := users(4)
	var obs testutil.ObservationLog
	l := delivery.NewLedger(run, addrs, &obs)
	tg, err := demo.Start(ctx, demo.Options{Users: tusers, OpTimeout: netTimeout,
		Faults: demo.Faults{DeliveryDelay: delay}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	watched := Sample(cusers, 2) // user1 and user3
	if watched[0].Login != "user1" || watched[1].Login != "user3" {
		t.Fatalf("Sample() = %v", watched)
	}
	w := New(l, Config{IMAP: imapclient.Config{Address: tg.IMAPAddr(), Timeout: netTimeout}, Users: watched})
	wctx, stop := context.WithCancel(ctx)
	wait := w.Start(wctx)

	gen, err := message.NewGenerator(1, []int{1024})
	if err != nil {
		t.Fatal(err)
	}
	const nMsgs = 8
	for i := 1; i <= nMsgs; i++ {
		env := message.Envelope{ID: delivery.NewID(run, uint64(i)), From: addrs[1], To: []string{addrs[(i-1)%4]}, Subject: "t", Sent: time.Now()}
		sc, err := smtpclient.Connect(ctx, smtpclient.Config{Address: tg.SMTPAddr(), Timeout: netTimeout})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Send(ctx, env.From, env.To, bytes.NewReader(gen.Message(env, 1024, uint64(i)))); err != nil {
			t.Fatal(err)
		}
		l.Accepted(measure.Submission{ID: env.ID, Accepted: time.Now(), Local: env.To})
		sc.Close()
	}
	for deadline := time.Now().Add(netTimeout); w.Stats().Announced < nMsgs/2; {
		if time.Now().After(deadline) {
			t.Fatalf("announced %d of %d watched deliveries: %+v", w.Stats().Announced, nMsgs/2, w.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wait()
	st := w.Stats()
	if st.Errors != 0 || st.Connects != 2 {
		t.Errorf("Stats() = %+v: want 2 connections, no errors", st)
	}
	r := l.Reconcile()
	if r.TimedByAnnouncement != nMsgs/2 || r.DeliveredLocal != nMsgs/2 {
		t.Errorf("Reconcile() = %+v: want the %d watched deliveries timed by announcement", r, nMsgs/2)
	}
	for _, o := range obs.All() {
		// Never below the injected delay (INTERNALDATE, truncated, reads
		// 0 s here); above it only by the loaded machine's scheduling.
		if o.Function != measure.DeliveryLocal || o.Duration < delay-10*time.Millisecond || o.Duration > delay+time.Second {
			t.Errorf("%s %v: want about %v", o.Function, o.Duration, delay)
		}
	}
}

// The clock probe finds the embedded target's clock (mailbench's own) in
// agreement, within its stated uncertainty, and leaves no probe behind.
func TestProbeClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tusers, cusers, _ := users(1)
	tg, err := demo.Start(ctx, demo.Options{Users: tusers, OpTimeout: netTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	cfg := imapclient.Config{Address: tg.IMAPAddr(), Timeout: netTimeout}
	c, err := ProbeClock(ctx, cfg, cusers[0], "Drafts")
	if err != nil {
		t.Fatal(err)
	}
	if c.UncertaintyMs < 500 || c.SkewMs < -c.UncertaintyMs || c.SkewMs > c.UncertaintyMs {
		t.Errorf("ProbeClock() = %+v: want |skew| within the uncertainty (≥ 500 ms)", c)
	}
	cl, err := imapclient.Connect(ctx, cfg, tusers[0].Login, tusers[0].Password)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if n, err := cl.Status(ctx, "Drafts"); err != nil || n != 0 {
		t.Errorf("Drafts holds %d messages (%v) after the probe, want 0", n, err)
	}
	if _, err := ProbeClock(ctx, cfg, cusers[0], "No Such Mailbox"); err == nil {
		t.Error("ProbeClock into a missing mailbox succeeded")
	}
}
