package inboxcheck

import (
	"bytes"
	"context"
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

// TestSettleWaitsForTheLimit: mail is never called missing because the
// settle was short. The server delivers every 2nd local message 1.7 s
// after its 250 and drops every 5th. With a 1 s limit, Settle keeps looking
// until the last missing delivery's limit (plus the margin) has passed,
// however long its until: the delayed mail is found (late, not lost) and
// only the dropped mail is lost.
func TestSettleWaitsForTheLimit(t *testing.T) {
	const (
		nMsgs = 10
		// INTERNALDATE times a delivery to ±0.5 s (whole seconds, read at
		// mid-second), so a delay D reads above D−0.5 s: 1.7 s is late
		// against a 1 s limit at any phase of the clock, and arrives
		// before the settle's limit plus margin (2.5 s) has passed.
		delay  = 1700 * time.Millisecond
		limit  = time.Second
		margin = 1500 * time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tusers := []workload.User{{Login: "user1", Password: "pw-1"}, {Login: "user2", Password: "pw-2"}}
	var cusers []workload.User
	var addrs []string
	for _, u := range tusers {
		a := u.Login + "@" + demo.DefaultLocalDomain
		addrs = append(addrs, a)
		cusers = append(cusers, workload.User{Address: a, Login: u.Login, Password: u.Password})
	}
	var obs testutil.ObservationLog
	l := delivery.NewLedger(run, addrs, &obs)
	l.SetLimits(limit, limit)
	tg, err := demo.Start(ctx, demo.Options{Users: tusers, OpTimeout: netTimeout,
		Faults: demo.Faults{DeliveryDelay: delay, DelayEvery: 2, DropEvery: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	gen, err := message.NewGenerator(1, []int{1024})
	if err != nil {
		t.Fatal(err)
	}
	smtpCfg := smtpclient.Config{Address: tg.SMTPAddr(), Timeout: netTimeout}
	for i := 1; i <= nMsgs; i++ {
		env := message.Envelope{ID: delivery.NewID(run, uint64(i)), From: addrs[0], To: []string{addrs[i%2]}, Subject: "t", Sent: time.Now()}
		sc, err := smtpclient.Connect(ctx, smtpCfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Send(ctx, env.From, env.To, bytes.NewReader(gen.Message(env, 1024, uint64(i)))); err != nil {
			t.Fatal(err)
		}
		l.Accepted(measure.Submission{ID: env.ID, Accepted: time.Now(), Local: env.To})
		sc.Close()
	}
	lastAccepted := time.Now()

	ch := New(l, Config{IMAP: imapclient.Config{Address: tg.IMAPAddr(), Timeout: netTimeout}, Users: cusers,
		SettlePause: 50 * time.Millisecond, SettleMargin: margin})
	left := ch.Settle(ctx, time.Now().Add(20*time.Second))
	ended := time.Now()
	l.Finish()
	// Deliveries 5 and 10 are dropped; of the others, the even ones (2, 4, 6, 8) are delayed.
	if left != 2 {
		t.Errorf("Settle() left %d unseen, want the 2 dropped", left)
	}
	if ended.Before(lastAccepted.Add(limit+margin)) || ended.After(lastAccepted.Add(limit+margin+3*time.Second)) {
		t.Errorf("Settle ended %v after the last acceptance; want after the %v limit, about %v margin later",
			ended.Sub(lastAccepted), limit, margin)
	}
	r := l.Reconcile()
	if r.LostLocal != 2 || r.DeliveredLocal != nMsgs-2 || r.LateLocal != 4 {
		t.Errorf("Reconcile() = %+v; want 2 lost (dropped), 8 seen, 4 late (delayed beyond the limit)", r)
	}
	if st := tg.Stats(); st.Delayed != 5 || st.Dropped != 2 {
		t.Errorf("target stats %+v: the faults did not fire as planned", st)
	}
	var late int
	for _, o := range obs.All() {
		if o.Duration > limit {
			late++
		}
	}
	if late != 4+2 {
		t.Errorf("%d delivery observations above the limit, want the 4 delayed ones and the 2 missing", late)
	}
}
