package integration

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/workload"
)

// TestInitCleanRoundTrip populates three users given in a CSV users file,
// checks every mailbox against the plan, checks that a second init adds
// nothing, then cleans and checks that every mailbox is empty.
func TestInitCleanRoundTrip(t *testing.T) {
	needSUT(t)
	cfg := sutConfig(t)
	usersFile(t, cfg, "user31", "user32", "user33")
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 3 || users[0].Login != "user31" {
		t.Fatalf("users from the CSV file: %v", users)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Start from nothing, whatever earlier runs left.
	if _, err := populate.Clean(ctx, cfg, populate.Options{}); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, u := range users {
		for _, p := range mailboxes.For(cfg, u.Login) {
			total += int64(p.Messages)
		}
	}

	s1, err := populate.Init(ctx, cfg, populate.Options{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", s1)
	if s1.Users != 3 || s1.Appended != total || s1.Present != 0 {
		t.Errorf("first init: %+v; want 3 users, %d appended, 0 present", s1, total)
	}
	for _, u := range users {
		plan := mailboxes.For(cfg, u.Login)
		got := mailboxCounts(t, cfg, u, names(plan))
		for _, p := range plan {
			if got[p.Mailbox] != p.Messages {
				t.Errorf("%s %s after init: %d messages, want %d", u.Login, p.Mailbox, got[p.Mailbox], p.Messages)
			}
		}
	}

	s2, err := populate.Init(ctx, cfg, populate.Options{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Appended != 0 || s2.Present != total {
		t.Errorf("second init: %+v; want 0 appended, %d present", s2, total)
	}

	cs, err := populate.Clean(ctx, cfg, populate.Options{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", cs)
	if cs.Users != 3 || cs.Expunged != total {
		t.Errorf("clean: %+v; want 3 users, %d messages removed", cs, total)
	}
	for _, u := range users {
		plan := mailboxes.For(cfg, u.Login)
		for mb, n := range mailboxCounts(t, cfg, u, names(plan)) {
			// Deleted folders may be recreated empty by the server
			// (Dovecot's auto = subscribe): empty or absent both pass.
			if n > 0 {
				t.Errorf("%s %s after clean: %d messages, want none", u.Login, mb, n)
			}
		}
	}
}

func names(plan []mailboxes.Plan) []string {
	var out []string
	for _, p := range plan {
		out = append(out, p.Mailbox)
	}
	return out
}

// TestDeliveryPath submits one message to Postfix for a local and a remote
// recipient: the local copy must reach the user's INBOX in Dovecot, the
// remote one the sink where Postfix relays.
func TestDeliveryPath(t *testing.T) {
	needSUT(t)
	waitSinkPort(t)
	cfg := sutConfig(t)
	cfg.Users.Count = 34
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	local := users[33] // user34

	arrivals := make(chan delivery.Arrival, 16)
	sink, err := smtpsink.New(smtpsink.Options{Addr: sinkAddr, OnMessage: func(a delivery.Arrival) {
		select {
		case arrivals <- a:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Start(); err != nil {
		unavailable(t, fmt.Sprintf("sink on %s: %v", sinkAddr, err))
	}
	defer sink.Close()

	gen, err := message.NewGenerator(time.Now().UnixNano(), []int{2048})
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("itest-%d", time.Now().UnixNano())
	remote := "someone@" + cfg.Users.RemoteDomain
	msg := gen.Message(message.Envelope{
		ID: id, From: "tester@" + cfg.Users.RemoteDomain, To: []string{local.Address, remote},
		Subject: "integration delivery " + id, Sent: time.Now(),
	}, 2048, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc, err := smtpclient.Connect(ctx, smtpclient.Config{Address: smtpAddr, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sc.Send(ctx, "tester@"+cfg.Users.RemoteDomain, []string{local.Address, remote}, bytes.NewReader(msg))
	if err != nil {
		t.Fatalf("submit to Postfix: %v (%+v)", err, res)
	}
	sc.Quit(ctx)
	submitted := time.Now()

	// Local: poll the INBOX until the message with our id is there.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Since(submitted) < 30*time.Second {
			if inInbox(t, cfg, local, id) {
				t.Logf("local delivery to %s's INBOX after %v", local.Login, time.Since(submitted).Round(time.Millisecond))
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Errorf("message %s not in %s's INBOX 30 s after Postfix accepted it (see /var/lib/mailbench-sut/log/postfix.log)", id, local.Login)
	}()

	// Remote: wait for the sink to get it.
	timeout := time.After(30 * time.Second)
wait:
	for {
		select {
		case a := <-arrivals:
			if a.ID != id {
				continue // mail Postfix had queued from earlier
			}
			if !slices.Contains(a.Recipients, remote) || slices.Contains(a.Recipients, local.Address) {
				t.Errorf("sink recipients %v, want only %s", a.Recipients, remote)
			}
			if a.Sent.IsZero() || a.Received.Before(a.Sent) {
				t.Errorf("relay delay not measurable: sent %v received %v", a.Sent, a.Received)
			}
			t.Logf("remote delivery to the sink after %v", a.Received.Sub(a.Sent).Round(time.Millisecond))
			break wait
		case <-timeout:
			t.Errorf("message %s did not reach the sink on %s within 30 s (Postfix may have marked the relay dead earlier: postqueue -c /var/lib/mailbench-sut/postfix -f)", id, sinkAddr)
			break wait
		}
	}
	wg.Wait()
}

// inInbox reports whether u's INBOX holds a message with X-Mailbench-Id id
// among its newest 20.
func inInbox(t *testing.T, cfg *workload.Config, u workload.User, id string) bool {
	ctx := context.Background()
	c := login(t, cfg, u)
	defer c.Logout(ctx)
	mb, err := c.SelectInbox(ctx)
	if err != nil || mb.Messages == 0 {
		return false
	}
	from := uint32(1)
	if mb.Messages > 20 {
		from = mb.Messages - 19
	}
	infos, err := c.FetchRangeEnvelope(ctx, from, 0)
	if err != nil {
		return false
	}
	for _, mi := range infos {
		if mi.ID == id {
			return true
		}
	}
	return false
}

// TestShortRun initialises eight users and runs a short benchmark of the
// shipped dovecot-postfix profile against the SUT: every SPEC function
// runs, relayed mail reaches the sink, every accepted message is found
// once and intact on both paths with its delivery time measured, and the
// table is produced.
func TestShortRun(t *testing.T) {
	needSUT(t)
	waitSinkPort(t)
	run, text, _ := shortRun(t, sutConfig(t))
	checkShortRun(t, "Dovecot+Postfix", run)
	if run.Sink.Messages == 0 {
		t.Errorf("the sink counted no relayed mail")
	}
	if !strings.Contains(text, "Verdict:") {
		t.Errorf("the text report has no Verdict line")
	}
	checkServerWatched(t, run, "dovecot.cpu_cores", "postfix.cpu_cores", "host.cpu_percent", "mailbench.cpu_cores",
		"dovecot_stats.dovecot_imap_command_per_s", "dovecot_stats.dovecot_auth_success_per_s", "dovecot.processes")
}

// checkServerWatched: the shipped config's [server] sources saw the
// servers the run loaded: no source failed, and each named figure shows
// some use during the run (their processes worked, a server's own
// statistics counted the IMAP commands and logins).
func checkServerWatched(t *testing.T, run *report.Run, figures ...string) {
	t.Helper()
	s := run.Server
	if s == nil {
		t.Fatal("no server section: the shipped config watches the SUT")
	}
	for _, src := range s.Sources {
		if src.Failures > 0 {
			t.Errorf("source %s: %d of %d samples failed (last: %s)", src.Name, src.Failures, src.Samples, src.LastError)
		}
	}
	for _, name := range figures {
		if f, ok := s.Figure(name); !ok || f.Peak <= 0 {
			t.Errorf("figure %s: %+v (present %v): want some use during the run", name, f, ok)
		}
	}
}
