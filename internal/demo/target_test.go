package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/gosmtp"
	"github.com/mailbench/mailbench/workload"
)

// populateCount is how many messages the test Populate puts into a mailbox:
// different per user and mailbox, so that a mix-up shows.
func populateCount(login, mailbox string) int {
	return len(mailbox) + len(login)%3 + strings.Count(login, "2")*2
}

func populateForTest(user workload.User, mailbox string, add func([]byte, time.Time) error) error {
	for i := range populateCount(user.Login, mailbox) {
		msg := testMessage(fmt.Sprintf("%s-%s-%d", user.Login, strings.ReplaceAll(mailbox, "/", "."), i))
		if err := add(msg, time.Date(2025, 1, 1, 0, i, 0, 0, time.UTC)); err != nil {
			return err
		}
	}
	return nil
}

func TestStartCreatesPopulatedSubscribedMailboxes(t *testing.T) {
	folders := []string{"Archive", "Projects", "Projects/Alpha"}
	tg := startTarget(t, Options{Folders: folders, Populate: populateForTest})
	want := append([]string{"Drafts", "INBOX", "Sent", "Trash"}, folders...)
	slices.Sort(want)

	for _, u := range testUsers {
		t.Run(u.Login, func(t *testing.T) {
			c := imapLogin(t, tg.IMAPAddr(), u.Login, u.Password, nil)
			list, err := c.List("", "*", nil).Collect()
			if err != nil {
				t.Fatalf("List() = %v", err)
			}
			var names []string
			for _, l := range list {
				if l.Delim != '/' {
					t.Errorf("mailbox %q delimiter %q, want '/'", l.Mailbox, l.Delim)
				}
				names = append(names, l.Mailbox)
			}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Errorf("LIST = %v, want %v", names, want)
			}
			for _, name := range want {
				sel, err := c.Select(name, &imap.SelectOptions{ReadOnly: true}).Wait()
				if err != nil {
					t.Fatalf("Select(%q) = %v", name, err)
				}
				if got, want := sel.NumMessages, uint32(populateCount(u.Login, name)); got != want {
					t.Errorf("%s: %d messages, want %d", name, got, want)
				}
			}
			if err := c.Logout().Wait(); err != nil {
				t.Errorf("Logout() = %v", err)
			}

			raw := dialRaw(t, tg.IMAPAddr())
			if _, err := raw.readLine(testTimeout); err != nil {
				t.Fatalf("greeting: %v", err)
			}
			if _, st, err := raw.cmd(fmt.Sprintf("LOGIN %s %s", u.Login, u.Password), testTimeout); err != nil || !strings.HasPrefix(st, "OK") {
				t.Fatalf("LOGIN = %q, %v", st, err)
			}
			lines, st, err := raw.cmd(`LSUB "" "*"`, testTimeout)
			if err != nil || !strings.HasPrefix(st, "OK") {
				t.Fatalf("LSUB = %q, %v", st, err)
			}
			var subscribed []string
			for _, l := range lines {
				if !strings.HasPrefix(l, "* LSUB ") {
					continue
				}
				f := strings.Fields(l)
				subscribed = append(subscribed, strings.Trim(f[len(f)-1], `"`))
			}
			slices.Sort(subscribed)
			if !slices.Equal(subscribed, want) {
				t.Errorf("LSUB = %v, want %v", subscribed, want)
			}
		})
	}
}

func TestIMAPLoginRejectsBadCredentials(t *testing.T) {
	tg := startTarget(t, Options{})
	tests := []struct{ name, login, password string }{
		{"wrong password", "user1", "secret-two"},
		{"unknown user", "nobody", "secret-one"},
		{"address is not a login", "second@example.test", "secret-two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := dialRaw(t, tg.IMAPAddr())
			if _, err := raw.readLine(testTimeout); err != nil {
				t.Fatal(err)
			}
			_, st, err := raw.cmd(fmt.Sprintf("LOGIN %q %q", tt.login, tt.password), testTimeout)
			if err != nil || !strings.HasPrefix(st, "NO") {
				t.Errorf("LOGIN = %q, %v; want NO", st, err)
			}
		})
	}
}

func TestSMTPDeliversLocalMail(t *testing.T) {
	tg := startTarget(t, Options{})
	tests := []struct {
		name string
		to   []string
		want map[string]int // login -> INBOX messages after this case
	}{
		{"one recipient", []string{"user1@example.test"}, map[string]int{"user1": 1, "user2": 0}},
		{"address differs from login", []string{"second@example.test"}, map[string]int{"user1": 1, "user2": 1}},
		{"domain case-insensitive, duplicate recipient once", []string{"user1@EXAMPLE.TEST", "USER1@example.test", "second@example.test"}, map[string]int{"user1": 2, "user2": 2}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := testMessage(fmt.Sprint("local", i))
			if err := sendMail(tg.SMTPAddr(), "sender@client.test", tt.to, msg, nil); err != nil {
				t.Fatalf("sendMail() = %v", err)
			}
			total := 0
			for _, u := range testUsers {
				got := inbox(t, tg, u)
				if len(got) != tt.want[u.Login] {
					t.Fatalf("%s INBOX has %d messages, want %d", u.Login, len(got), tt.want[u.Login])
				}
				total += len(got)
				if len(got) > 0 && slices.Contains(tt.to, address(u)) {
					checkDelivered(t, got[len(got)-1], msg)
				}
			}
			if s := tg.Stats(); s.Delivered != int64(total) {
				t.Errorf("Stats().Delivered = %d, want %d", s.Delivered, total)
			}
		})
	}
}

func TestSMTPRejectsRecipients(t *testing.T) {
	tests := []struct {
		name      string
		relayAddr string
		rcpt      string
		wantCode  int
		wantEnh   smtp.EnhancedCode
	}{
		{"unknown local user", "127.0.0.1:1", "nobody@example.test", 550, smtp.EnhancedCode{5, 1, 1}},
		{"login is not an address", "127.0.0.1:1", "user2@example.test", 550, smtp.EnhancedCode{5, 1, 1}},
		{"remote without relay", "", "bob@remote.test", 550, smtp.EnhancedCode{5, 7, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := startTarget(t, Options{RelayAddr: tt.relayAddr})
			err := sendMail(tg.SMTPAddr(), "sender@client.test", []string{tt.rcpt}, testMessage("x"), nil)
			var se *smtp.SMTPError
			if !errors.As(err, &se) || se.Code != tt.wantCode || se.EnhancedCode != tt.wantEnh {
				t.Fatalf("sendMail() = %v, want %d %v", err, tt.wantCode, tt.wantEnh)
			}
			if s := tg.Stats(); s.Rejected != 1 || s.Delivered != 0 || s.Queue != 0 {
				t.Errorf("Stats() = %+v, want 1 rejected and nothing else", s)
			}
		})
	}
}

func TestSMTPRelaysRemoteMail(t *testing.T) {
	permanent := &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "no"}
	temporary := &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "later"}
	tests := []struct {
		name         string
		reject       func(attempt int) error
		rcptErr      func(string) error
		to           []string
		wantRelayed  int64
		wantFailed   int64
		wantAttempts int // DATA attempts seen by the relay
	}{
		{"accepted", nil, nil, []string{"bob@remote.test"}, 1, 0, 1},
		{"two recipients one message", nil, nil, []string{"bob@remote.test", "carol@other.test"}, 2, 0, 1},
		{"transient then accepted", func(n int) error {
			if n < 3 {
				return temporary
			}
			return nil
		}, nil, []string{"bob@remote.test"}, 1, 0, 3},
		{"transient until attempts run out", func(int) error { return temporary }, nil, []string{"bob@remote.test"}, 0, 1, 3},
		{"permanent refusal not retried", func(int) error { return permanent }, nil, []string{"bob@remote.test"}, 0, 1, 1},
		{"one recipient refused at RCPT", nil, func(rcpt string) error {
			if strings.HasPrefix(rcpt, "bad") {
				return permanent
			}
			return nil
		}, []string{"bad@remote.test", "bob@remote.test"}, 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRelayServer(t, func(rs *relayServer) { rs.reject, rs.rcptErr = tt.reject, tt.rcptErr })
			tg := startTarget(t, Options{RelayAddr: rs.addr, RelayRetryDelay: 10 * time.Millisecond, OpTimeout: testTimeout})
			msg := testMessage("relay")
			to := append([]string{"user1@example.test"}, tt.to...)
			if err := sendMail(tg.SMTPAddr(), "sender@client.test", to, msg, nil); err != nil {
				t.Fatalf("sendMail() = %v", err)
			}
			waitFor(t, "relay to finish", func() bool { return tg.Stats().Queue == 0 })
			s := tg.Stats()
			if s.Relayed != tt.wantRelayed || s.RelayFailed != tt.wantFailed || s.Delivered != 1 {
				t.Errorf("Stats() = %+v, want Relayed %d RelayFailed %d Delivered 1", s, tt.wantRelayed, tt.wantFailed)
			}
			rs.mu.Lock()
			attempts := rs.attempts
			rs.mu.Unlock()
			if attempts != tt.wantAttempts {
				t.Errorf("relay saw %d DATA attempts, want %d", attempts, tt.wantAttempts)
			}
			got := rs.received()
			if tt.wantRelayed == 0 {
				if len(got) != 0 {
					t.Errorf("relay kept %d messages, want none", len(got))
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("relay received %d messages, want 1", len(got))
			}
			if got[0].from != "sender@client.test" || int64(len(got[0].to)) != tt.wantRelayed || slices.Contains(got[0].to, "user1@example.test") {
				t.Errorf("relay envelope from %q to %v", got[0].from, got[0].to)
			}
			checkDelivered(t, got[0].msg, msg)
		})
	}
}

func TestRelayUnreachableGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here any more
	tg := startTarget(t, Options{RelayAddr: addr, RelayRetryDelay: 5 * time.Millisecond, RelayAttempts: 2})
	if err := sendMail(tg.SMTPAddr(), "", []string{"a@remote.test", "b@remote.test"}, testMessage("x"), nil); err != nil {
		t.Fatalf("sendMail() = %v (a relay problem must not show to the submitter)", err)
	}
	waitFor(t, "relay to give up", func() bool { return tg.Stats().Queue == 0 })
	if s := tg.Stats(); s.RelayFailed != 2 || s.Relayed != 0 {
		t.Errorf("Stats() = %+v, want RelayFailed 2", s)
	}
}

// TestRelayDefaultConcurrency: by default the target relays over
// DefaultRelayWorkers connections at once, as Postfix does to one
// destination (default_destination_concurrency_limit = 20). With 4 (until
// 0.3) a busy demo target's relay, not its CPU, bounded the remote mail it
// took: bench/rate at 5,000,000 sessions/hour filled the queue and the
// 451s counted as the server's errors.
func TestRelayDefaultConcurrency(t *testing.T) {
	rs := newRelayServer(t, func(rs *relayServer) { rs.hold = make(chan struct{}) })
	tg := startTarget(t, Options{RelayAddr: rs.addr, OpTimeout: testTimeout})
	held := func() int { rs.mu.Lock(); defer rs.mu.Unlock(); return rs.held }
	const postfixConcurrency = 20 // default_destination_concurrency_limit
	const messages = postfixConcurrency + 5
	for i := range messages {
		if err := sendMail(tg.SMTPAddr(), "s@client.test", []string{"bob@remote.test"}, testMessage(fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "20 relay transactions in DATA", func() bool { return held() >= postfixConcurrency })
	if s := tg.Stats(); s.Queue != messages {
		t.Errorf("Stats().Queue = %d, want %d (20 in flight, 5 waiting)", s.Queue, messages)
	}
	time.Sleep(50 * time.Millisecond) // a 21st connection would be in DATA by now
	if n := held(); n != postfixConcurrency {
		t.Errorf("%d relay transactions at once, want %d", n, postfixConcurrency)
	}
	close(rs.hold)
	waitFor(t, "the queue to drain", func() bool { return tg.Stats().Queue == 0 })
	if s := tg.Stats(); s.Relayed != messages {
		t.Errorf("Stats().Relayed = %d, want %d", s.Relayed, messages)
	}
}

func TestRelayQueueFullDefers(t *testing.T) {
	rs := newRelayServer(t, func(rs *relayServer) { rs.hold = make(chan struct{}) })
	tg := startTarget(t, Options{RelayAddr: rs.addr, RelayWorkers: 1, RelayQueueSize: 1, OpTimeout: testTimeout})
	send := func(id string) error {
		return sendMail(tg.SMTPAddr(), "s@client.test", []string{"user1@example.test", "bob@remote.test"}, testMessage(id), nil)
	}
	// The worker takes the first message and blocks in the relay's DATA;
	// the second waits in the queue; the third finds it full.
	if err := send("1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker to take message 1", func() bool {
		return len(tg.relay.queue) == 0
	})
	if err := send("2"); err != nil {
		t.Fatal(err)
	}
	err := send("3")
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 451 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 0}) {
		t.Fatalf("third send = %v, want 451 4.3.0", err)
	}
	if s := tg.Stats(); s.Deferred != 1 || s.Queue != 2 || s.Delivered != 2 {
		t.Errorf("Stats() = %+v, want Deferred 1, Queue 2, Delivered 2 (deferred mail is not delivered locally)", s)
	}
	close(rs.hold)
	waitFor(t, "the queue to drain", func() bool { return tg.Stats().Queue == 0 })
	if s := tg.Stats(); s.Relayed != 2 {
		t.Errorf("Stats().Relayed = %d, want 2", s.Relayed)
	}
}

func TestStallIMAP(t *testing.T) {
	tg := startTarget(t, Options{})
	u := testUsers[0]

	established := dialRaw(t, tg.IMAPAddr())
	if _, err := established.readLine(testTimeout); err != nil {
		t.Fatal(err)
	}
	tg.StallIMAP(true)

	// A new connection gets no greeting and an established one no answer.
	fresh := dialRaw(t, tg.IMAPAddr())
	if line, err := fresh.readLine(200 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("greeting while stalled = %q, %v; want a timeout", line, err)
	}
	if _, st, err := established.cmd("NOOP", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("NOOP while stalled = %q, %v; want a timeout", st, err)
	}
	// SMTP keeps working.
	if err := sendMail(tg.SMTPAddr(), "", []string{address(u)}, testMessage("s"), nil); err != nil {
		t.Fatalf("sendMail() while IMAP stalled = %v", err)
	}

	tg.StallIMAP(false)
	// The held-back answers arrive, and new connections work.
	if line, err := fresh.readLine(testTimeout); err != nil || !strings.HasPrefix(line, "* OK") {
		t.Fatalf("greeting after stall = %q, %v", line, err)
	}
	if line, err := established.readLine(testTimeout); err != nil || !strings.HasPrefix(line, "t1 OK") {
		t.Fatalf("NOOP answer after stall = %q, %v", line, err)
	}
	if got := inbox(t, tg, u); len(got) != 1 {
		t.Errorf("INBOX after stall has %d messages, want 1", len(got))
	}
}

func TestCloseIsPromptWithOpenConnections(t *testing.T) {
	rs := newRelayServer(t, func(rs *relayServer) { rs.hold = make(chan struct{}) })
	tg, err := Start(context.Background(), Options{Users: testUsers, RelayAddr: rs.addr})
	if err != nil {
		t.Fatal(err)
	}
	loggedIn := imapLogin(t, tg.IMAPAddr(), testUsers[0].Login, testUsers[0].Password, nil)
	if _, err := loggedIn.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	stalled := dialRaw(t, tg.IMAPAddr())
	smtpConn, err := net.DialTimeout("tcp", tg.SMTPAddr(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer smtpConn.Close()
	// A relay worker is stuck in the relay's DATA.
	if err := sendMail(tg.SMTPAddr(), "", []string{"bob@remote.test"}, testMessage("c"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the relay to be busy", func() bool { return len(tg.relay.queue) == 0 })
	tg.StallIMAP(true)

	start := time.Now()
	if err := tg.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case <-loggedIn.Closed():
	case <-time.After(testTimeout):
		t.Error("IMAP client still connected after Close")
	}
	for name, c := range map[string]net.Conn{"stalled IMAP": stalled.conn, "SMTP": smtpConn} {
		c.SetReadDeadline(time.Now().Add(testTimeout))
		buf := make([]byte, 4096)
		for {
			_, err := c.Read(buf)
			if err == nil {
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s connection still open after Close", name)
			}
			break
		}
	}
	if s := tg.Stats(); s.RelayFailed != 1 || s.Queue != 0 {
		t.Errorf("Stats() after Close = %+v, want the unsent recipient counted failed", s)
	}
	if err := tg.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name   string
		faults Faults
		sends  int
	}{
		{"none", Faults{}, 5},
		{"drop every 3rd", Faults{DropEvery: 3}, 7},
		{"duplicate every 2nd", Faults{DuplicateEvery: 2}, 5},
		{"corrupt every 2nd", Faults{CorruptEvery: 2}, 5},
		{"all at once", Faults{DropEvery: 3, DuplicateEvery: 2, CorruptEvery: 4}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := startTarget(t, Options{Faults: tt.faults})
			u := testUsers[0]
			sent := make(map[string][]byte) // Message-Id -> body
			for i := range tt.sends {
				id := fmt.Sprintf("f%d", i)
				msg := testMessage(id)
				if err := sendMail(tg.SMTPAddr(), "", []string{address(u)}, msg, nil); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
				_, sent[id] = splitMessage(t, msg)
			}
			got := inbox(t, tg, u)

			// What the INBOX shows, judged from the messages themselves.
			copies := make(map[string]int)
			corrupted := 0
			for _, m := range got {
				header, body := splitMessage(t, m)
				id := between(string(header), "Message-Id: <", "@")
				copies[id]++
				if copies[id] == 1 && !bytes.Equal(body, sent[id]) {
					corrupted++
					if len(body) != len(sent[id]) {
						t.Errorf("corruption changed the body length of %s", id)
					}
				}
			}
			var seen, dup int64
			for _, n := range copies {
				seen++
				dup += int64(n - 1)
			}
			s := tg.Stats()
			if want := int64(tt.sends) - s.Dropped; seen != want || s.Delivered != want {
				t.Errorf("INBOX holds %d distinct messages, Stats().Delivered %d, want %d (sent %d, dropped %d)", seen, s.Delivered, want, tt.sends, s.Dropped)
			}
			if dup != s.Duplicated || int64(corrupted) != s.Corrupted {
				t.Errorf("INBOX shows %d duplicates and %d corrupted; Stats() = %+v", dup, corrupted, s)
			}
			// The counters follow the documented period rule.
			var wantDrop, wantDup, wantCorrupt int64
			for n := int64(1); n <= int64(tt.sends); n++ {
				if every(tt.faults.DropEvery, n) {
					wantDrop++
					continue
				}
				if every(tt.faults.DuplicateEvery, n) {
					wantDup++
				}
				if every(tt.faults.CorruptEvery, n) {
					wantCorrupt++
				}
			}
			if s.Dropped != wantDrop || s.Duplicated != wantDup || s.Corrupted != wantCorrupt {
				t.Errorf("Stats() = %+v, want Dropped %d Duplicated %d Corrupted %d", s, wantDrop, wantDup, wantCorrupt)
			}
		})
	}
}

// between returns the text of s between the first before and the next after.
func between(s, before, after string) string {
	_, rest, _ := strings.Cut(s, before)
	v, _, _ := strings.Cut(rest, after)
	return v
}

func TestSTARTTLS(t *testing.T) {
	serverTLS, pool, err := tlsconf.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tg := startTarget(t, Options{TLSConfig: serverTLS})
	clientTLS := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	u := testUsers[1]

	msg := testMessage("tls")
	if err := sendMail(tg.SMTPAddr(), "", []string{u.Address}, msg, clientTLS); err != nil {
		t.Fatalf("sendMail() over STARTTLS = %v", err)
	}
	c := imapLogin(t, tg.IMAPAddr(), u.Login, u.Password, clientTLS)
	sel, err := c.Select("INBOX", nil).Wait()
	if err != nil || sel.NumMessages != 1 {
		t.Fatalf("Select(INBOX) over STARTTLS = %+v, %v; want 1 message", sel, err)
	}
	got := inbox(t, tg, u)
	checkDelivered(t, got[0], msg)
	if !bytes.Contains(got[0], []byte("with ESMTPS;")) {
		t.Errorf("Received header does not record TLS: %q", got[0][:bytes.Index(got[0], msg)])
	}

	// A client that does not trust the certificate fails the handshake.
	_, otherPool, err := tlsconf.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	err = sendMail(tg.SMTPAddr(), "", []string{u.Address}, msg, &tls.Config{RootCAs: otherPool, ServerName: "127.0.0.1"})
	if err == nil {
		t.Error("sendMail() with an untrusting client succeeded")
	}
}

func TestSelfSignedTLSHosts(t *testing.T) {
	tests := []struct {
		hosts     []string
		wantIPs   int
		wantNames []string
	}{
		{nil, 1, []string{"localhost"}},
		{[]string{"mail.example.test"}, 0, []string{"mail.example.test"}},
		{[]string{"::1", "127.0.0.1", "a.test"}, 2, []string{"a.test"}},
	}
	for _, tt := range tests {
		cfg, pool, err := tlsconf.SelfSignedTLS(tt.hosts...)
		if err != nil {
			t.Fatal(err)
		}
		leaf := cfg.Certificates[0].Leaf
		if len(leaf.IPAddresses) != tt.wantIPs || !slices.Equal(leaf.DNSNames, tt.wantNames) {
			t.Errorf("tlsconf.SelfSignedTLS(%v): IPs %v names %v", tt.hosts, leaf.IPAddresses, leaf.DNSNames)
		}
		if pool == nil || cfg.MinVersion < tls.VersionTLS12 {
			t.Errorf("tlsconf.SelfSignedTLS(%v): pool %v MinVersion %x", tt.hosts, pool, cfg.MinVersion)
		}
	}
}

func TestStartValidatesOptions(t *testing.T) {
	const secret = "pa55-do-not-print"
	tests := []struct {
		name string
		opts Options
	}{
		{"no users", Options{}},
		{"empty login", Options{Users: []workload.User{{Password: secret}}}},
		{"address in another domain", Options{Users: []workload.User{{Login: "a", Password: secret, Address: "a@other.test"}}}},
		{"duplicate login", Options{Users: []workload.User{{Login: "a", Password: secret}, {Login: "a", Password: secret, Address: "b@example.test"}}}},
		{"duplicate address", Options{Users: []workload.User{{Login: "a", Password: secret}, {Login: "b", Password: secret, Address: "A@example.test"}}}},
		{"folder with trailing delimiter", Options{Users: []workload.User{{Login: "a", Password: secret}}, Folders: []string{"Archive/"}}},
		{"empty folder", Options{Users: []workload.User{{Login: "a", Password: secret}}, Folders: []string{""}}},
		{"negative fault", Options{Users: []workload.User{{Login: "a", Password: secret}}, Faults: Faults{DropEvery: -1}}},
		{"populate fails", Options{Users: []workload.User{{Login: "a", Password: secret}}, Populate: func(workload.User, string, func([]byte, time.Time) error) error {
			return errors.New("boom")
		}}},
		{"listen fails", Options{Users: []workload.User{{Login: "a", Password: secret}}, IMAPAddr: "256.0.0.1:0"}},
		{"implicit IMAP TLS without a config", Options{Users: []workload.User{{Login: "a", Password: secret}}, IMAPImplicitTLS: true}},
		{"implicit SMTP TLS without a config", Options{Users: []workload.User{{Login: "a", Password: secret}}, SMTPImplicitTLS: true}},
		{"unknown relay TLS mode", Options{Users: []workload.User{{Login: "a", Password: secret}}, RelayTLS: RelayImplicitTLS + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, err := Start(context.Background(), tt.opts)
			if err == nil {
				tg.Close()
				t.Fatal("Start() succeeded")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestStartHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := Start(ctx, Options{Users: testUsers, Populate: func(workload.User, string, func([]byte, time.Time) error) error {
		calls++
		cancel()
		return nil
	}})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("Start() = %v after %d Populate calls, want context.Canceled after 1", err, calls)
	}
}

func TestFoldersAreDeduplicated(t *testing.T) {
	tg := startTarget(t, Options{Folders: []string{"Archive", "inbox", "Archive", "Sent"}})
	c := imapLogin(t, tg.IMAPAddr(), testUsers[0].Login, testUsers[0].Password, nil)
	list, err := c.List("", "*", nil).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 {
		var names []string
		for _, l := range list {
			names = append(names, l.Mailbox)
		}
		t.Errorf("LIST = %v, want INBOX Sent Drafts Trash Archive once each", names)
	}
}

// BenchmarkStartPopulate measures start-up with 20 users × 150 messages.
func BenchmarkStartPopulate(b *testing.B) {
	users := make([]workload.User, 20)
	for i := range users {
		users[i] = workload.User{Login: fmt.Sprintf("user%d", i+1), Password: "x"}
	}
	body := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\r\n"), 64)
	msg := append([]byte("From: a@b.test\r\nSubject: s\r\n\r\n"), body...)
	perMailbox := map[string]int{"INBOX": 50, "Sent": 25, "Drafts": 10, "Trash": 15, "Archive": 25, "Projects": 25}
	populate := func(_ workload.User, mailbox string, add func([]byte, time.Time) error) error {
		for range perMailbox[mailbox] {
			if err := add(msg, time.Now()); err != nil {
				return err
			}
		}
		return nil
	}
	for b.Loop() {
		tg, err := Start(context.Background(), Options{Users: users, Folders: []string{"Archive", "Projects"}, Populate: populate})
		if err != nil {
			b.Fatal(err)
		}
		tg.Close()
	}
}

// TestDeliveryDelay checks the delayed local delivery fault: the 250 comes
// at once, the message reaches the INBOX only D later (with its
// INTERNALDATE then), only every DelayEvery-th delivery is held back, and
// Close discards what is still waiting.
func TestDeliveryDelay(t *testing.T) {
	const delay = 400 * time.Millisecond
	tg := startTarget(t, Options{Faults: Faults{DeliveryDelay: delay, DelayEvery: 2}})
	u := testUsers[0]
	start := time.Now()
	for i := range 2 { // delivery 1 at once, delivery 2 delayed
		if err := sendMail(tg.SMTPAddr(), "", []string{address(u)}, testMessage(fmt.Sprintf("d%d", i)), nil); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if sent := time.Since(start); sent >= delay {
		t.Fatalf("the sends took %v: the 250 waited for the delayed delivery", sent)
	}
	if n := len(inbox(t, tg, u)); n != 1 && time.Since(start) < delay {
		t.Fatalf("INBOX holds %d messages before the delay passed, want 1", n)
	}
	waitFor(t, "the delayed delivery", func() bool { return len(inbox(t, tg, u)) == 2 })
	if since := time.Since(start); since < delay {
		t.Errorf("the delayed message arrived after %v, before its delay %v", since, delay)
	}
	if s := tg.Stats(); s.Delayed != 1 || s.Delivered != 2 {
		t.Errorf("Stats() = %+v, want Delayed 1, Delivered 2", s)
	}

	// A delivery still waiting at Close is discarded, and Close does not wait for it.
	tg2 := startTarget(t, Options{Faults: Faults{DeliveryDelay: time.Hour}})
	if err := sendMail(tg2.SMTPAddr(), "", []string{address(u)}, testMessage("late"), nil); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	if err := tg2.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(closed); d > testTimeout {
		t.Errorf("Close took %v with a delayed delivery pending", d)
	}
	if s := tg2.Stats(); s.Delivered != 0 || s.Delayed != 1 {
		t.Errorf("Stats() after Close = %+v, want Delivered 0, Delayed 1", s)
	}
}

// TestRelayCachesConnections: a relay worker sends the next message over
// the connection of the last one, as Postfix's connection cache does, and
// ends it (QUIT) once it has been idle for relayCacheIdle.
func TestRelayCachesConnections(t *testing.T) {
	rs := newRelayServer(t, nil)
	tg := startTarget(t, Options{RelayAddr: rs.addr, RelayWorkers: 1, OpTimeout: testTimeout})
	const messages = 5
	for i := range messages {
		if err := sendMail(tg.SMTPAddr(), "s@client.test", []string{"bob@remote.test"}, testMessage(fmt.Sprint(i)), nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "relay to finish", func() bool { return tg.Stats().Queue == 0 })
	}
	if s := tg.Stats(); s.Relayed != messages || s.RelayFailed != 0 {
		t.Fatalf("Stats() = %+v, want %d relayed", s, messages)
	}
	if conns, ended := rs.counts(); conns != 1 || ended != 0 {
		t.Errorf("relay host saw %d connections, %d ended; want 1, still open", conns, ended)
	}
	start := time.Now()
	waitFor(t, "the idle connection to end", func() bool { _, ended := rs.counts(); return ended == 1 })
	if waited := time.Since(start); waited < relayCacheIdle/2 {
		t.Errorf("cached connection ended after %v idle, want about %v", waited, relayCacheIdle)
	}
	if err := sendMail(tg.SMTPAddr(), "s@client.test", []string{"bob@remote.test"}, testMessage("after"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "relay to finish", func() bool { return tg.Stats().Queue == 0 })
	if conns, _ := rs.counts(); conns != 2 || tg.Stats().Relayed != messages+1 {
		t.Errorf("after the idle end: %d connections, %d relayed; want 2, %d", conns, tg.Stats().Relayed, messages+1)
	}
}

// TestRelayHostEndsCachedConnection: a relay host that ends a connection
// between messages (a 421 at the next MAIL, or closing it unanswered)
// costs the relay a new connection, not a retry or a failed message.
func TestRelayHostEndsCachedConnection(t *testing.T) {
	for _, end421 := range []bool{true, false} {
		t.Run(fmt.Sprintf("421=%v", end421), func(t *testing.T) {
			rs := newRelayServer(t, func(rs *relayServer) { rs.perConn, rs.end421 = 1, end421 })
			tg := startTarget(t, Options{RelayAddr: rs.addr, RelayWorkers: 1, RelayAttempts: 1, OpTimeout: testTimeout})
			const messages = 3
			for i := range messages {
				if err := sendMail(tg.SMTPAddr(), "s@client.test", []string{"bob@remote.test"}, testMessage(fmt.Sprint(i)), nil); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "relay to finish", func() bool { return tg.Stats().Queue == 0 })
			}
			s := tg.Stats()
			rs.mu.Lock()
			attempts := rs.attempts
			rs.mu.Unlock()
			if s.Relayed != messages || s.RelayFailed != 0 || attempts != messages {
				t.Errorf("Stats() = %+v, %d DATA attempts; want %d relayed at the first attempt", s, attempts, messages)
			}
			if conns, _ := rs.counts(); conns != messages {
				t.Errorf("relay host saw %d connections, want %d (one per message it allows)", conns, messages)
			}
		})
	}
}
