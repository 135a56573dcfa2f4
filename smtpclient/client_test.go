package smtpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	smtp "github.com/mailbench/mailbench/internal/gosmtp"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
)

const testMsg = "From: user1@example.test\r\nTo: user2@example.test\r\nSubject: hi\r\n\r\nhello\r\n.dot line\r\n"

func connect(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConnectAndSendSuccess(t *testing.T) {
	serverTLS, clientTLS := testCert(t)
	tests := []struct {
		name string
		mode TLSMode
		auth string
	}{
		{"plain", TLSNone, AuthNone},
		{"plain auth PLAIN", TLSNone, AuthPlain},
		{"plain auth LOGIN", TLSNone, AuthLogin},
		{"starttls auth PLAIN", TLSStartTLS, AuthPlain},
		{"implicit", TLSImplicit, AuthNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := &backend{requireAuth: tt.auth != AuthNone}
			addr := startServer(t, be, tt.mode, serverTLS)
			rec := &recorder{}
			c := connect(t, Config{
				Address: addr, TLS: tt.mode, TLSConfig: clientTLS, Timeout: 5 * time.Second,
				Auth: tt.auth, Username: testUser, Password: testPassword, Observer: rec,
			})
			conn := rec.only(t, measure.SMTPConnect)
			if conn.Class != measure.OK || conn.Err != nil || conn.Duration <= 0 {
				t.Errorf("SMTP Connect observation %+v", conn)
			}
			bd := c.Breakdown()
			if bd.TCP <= 0 || bd.Greeting <= bd.EHLO || bd.EHLO <= 0 {
				t.Errorf("breakdown %+v lacks TCP/banner/EHLO", bd)
			}
			if (bd.TLS > 0) != (tt.mode != TLSNone) {
				t.Errorf("breakdown TLS = %v with mode %s", bd.TLS, tt.mode)
			}
			if (bd.Auth > 0) != (tt.auth != AuthNone) {
				t.Errorf("breakdown Auth = %v with auth %s", bd.Auth, tt.auth)
			}
			if conn.Connect == nil || *conn.Connect != bd {
				t.Errorf("observation phases %+v, want %+v", conn.Connect, bd)
			} else if conn.Connect.TLSUsed != (tt.mode != TLSNone) || conn.Connect.Resumed {
				t.Errorf("phases %+v: TLSUsed/Resumed wrong for mode %s without a session cache", conn.Connect, tt.mode)
			}
			if (bd.StartTLS > 0) != (tt.mode == TLSStartTLS) || bd.StartTLS >= bd.TLS && bd.TLS > 0 {
				t.Errorf("breakdown StartTLS = %v with mode %s", bd.StartTLS, tt.mode)
			}
			if sum := bd.TCP + bd.TLS + bd.Greeting + bd.Auth; sum > conn.Duration {
				t.Errorf("breakdown parts %v exceed the whole %v", sum, conn.Duration)
			}
			if _, ok := c.TLSConnectionState(); ok != (tt.mode != TLSNone) {
				t.Errorf("TLSConnectionState ok = %v with mode %s", ok, tt.mode)
			}

			res, err := c.Send(context.Background(), "user1@example.test", []string{"user2@example.test"}, strings.NewReader(testMsg))
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if !slices.Equal(res.Accepted, []string{"user2@example.test"}) || len(res.Refused) != 0 || res.Queued == "" {
				t.Errorf("SendResult %+v", res)
			}
			data := rec.only(t, measure.SMTPData)
			if data.Class != measure.OK || data.Duration <= 0 || data.Start.Before(conn.Start.Add(conn.Duration)) {
				t.Errorf("SMTP Data observation %+v", data)
			}
			msgs := be.messages()
			if len(msgs) != 1 || string(msgs[0].data) != testMsg {
				t.Fatalf("server received %+v", msgs)
			}
			if err := c.Quit(context.Background()); err != nil {
				t.Errorf("Quit: %v", err)
			}
			if _, err := c.Send(context.Background(), "a@b", []string{"c@d"}, strings.NewReader(testMsg)); err == nil {
				t.Error("Send after Quit succeeded")
			}
		})
	}
}

func TestTLSResumption(t *testing.T) {
	serverTLS, clientTLS := testCert(t)
	for _, tt := range []struct {
		name  string
		mode  TLSMode
		cache bool
		want  []bool // Resumed of the first and second connect
	}{
		{"implicit, shared cache", TLSImplicit, true, []bool{false, true}},
		{"starttls, shared cache", TLSStartTLS, true, []bool{false, true}},
		{"implicit, no cache", TLSImplicit, false, []bool{false, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := startServer(t, &backend{}, tt.mode, serverTLS)
			tc := clientTLS.Clone()
			if tt.cache {
				tc.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			}
			cfg := Config{Address: addr, TLS: tt.mode, TLSConfig: tc, Timeout: 5 * time.Second}
			var got, observed []bool
			for range 2 {
				rec := &recorder{}
				cfg.Observer = rec
				c := connect(t, cfg)
				// TLS 1.3 tickets arrive after the handshake; a round trip reads them.
				if _, err := c.Send(context.Background(), "a@example.test", []string{"b@example.test"}, strings.NewReader(testMsg)); err != nil {
					t.Fatal(err)
				}
				c.Quit(context.Background())
				got = append(got, c.Breakdown().Resumed)
				if o := rec.only(t, measure.SMTPConnect); o.Connect == nil || !o.Connect.TLSUsed {
					t.Fatalf("observation %+v lacks TLS phases", o)
				} else {
					observed = append(observed, o.Connect.Resumed)
				}
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(observed, tt.want) {
				t.Errorf("Resumed: breakdown %v, observed %v; want %v", got, observed, tt.want)
			}
		})
	}
}

func TestTLSFailures(t *testing.T) {
	serverTLS, _ := testCert(t)
	tests := []struct {
		name      string
		mode      TLSMode
		withTLS   bool
		wantClass measure.ErrorClass
	}{
		{"untrusted certificate, implicit", TLSImplicit, true, measure.TLS},
		{"untrusted certificate, starttls", TLSStartTLS, true, measure.TLS},
		{"STARTTLS not offered", TLSStartTLS, false, measure.Protocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srvCfg *tls.Config
			if tt.withTLS {
				srvCfg = serverTLS
			}
			addr := startServer(t, &backend{}, tt.mode, srvCfg)
			rec := &recorder{}
			_, err := Connect(context.Background(), Config{Address: addr, TLS: tt.mode, Timeout: 5 * time.Second, Observer: rec})
			if got := measure.Classify(err); got != tt.wantClass {
				t.Errorf("Connect error %v classified %q, want %q", err, got, tt.wantClass)
			}
			o := rec.only(t, measure.SMTPConnect)
			if o.Class != tt.wantClass || o.Err == nil {
				t.Errorf("observation %+v", o)
			}
			if o.Connect == nil || o.Connect.TCP <= 0 || o.Connect.TLSUsed || o.Connect.Resumed {
				t.Errorf("phases of a failed handshake %+v, want TCP only", o.Connect)
			}
		})
	}
}

func TestSendRecipients(t *testing.T) {
	tests := []struct {
		name         string
		from         string
		to           []string
		wantClass    measure.ErrorClass
		wantOp       string
		wantReply    string
		wantAccepted []string
		wantRefused  []string
	}{
		{name: "three accepted", from: "a@example.test",
			to:           []string{"u1@example.test", "u2@example.test", "u3@remote.test"},
			wantAccepted: []string{"u1@example.test", "u2@example.test", "u3@remote.test"}},
		{name: "one of three refused", from: "a@example.test",
			to:           []string{"u1@example.test", "nobody@example.test", "u3@remote.test"},
			wantAccepted: []string{"u1@example.test", "u3@remote.test"},
			wantRefused:  []string{"nobody@example.test"}},
		{name: "all refused", from: "a@example.test",
			to:        []string{"nobody1@example.test", "nobody2@example.test"},
			wantClass: measure.Protocol, wantOp: "RCPT TO", wantReply: "550 5.1.1 no such user",
			wantRefused: []string{"nobody1@example.test", "nobody2@example.test"}},
		{name: "sender refused", from: "reject@example.test", to: []string{"u1@example.test"},
			wantClass: measure.Protocol, wantOp: "MAIL FROM", wantReply: "553 5.7.1 sender rejected"},
		{name: "554 at the final reply", from: "spam@example.test", to: []string{"u1@example.test"},
			wantClass: measure.Protocol, wantOp: "DATA final reply", wantReply: "554 5.7.1 message refused as spam",
			wantAccepted: []string{"u1@example.test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := &backend{}
			rec := &recorder{}
			c := connect(t, Config{Address: startServer(t, be, TLSNone, nil), Timeout: 5 * time.Second, Observer: rec})
			to := slices.Clone(tt.to)
			res, err := c.Send(context.Background(), tt.from, to, strings.NewReader(testMsg))
			if !slices.Equal(to, tt.to) {
				t.Errorf("Send changed its recipients to %v", to) // Accepted may share to's array
			}
			if got := measure.Classify(err); got != tt.wantClass {
				t.Fatalf("Send error %v classified %q, want %q", err, got, tt.wantClass)
			}
			if tt.wantClass == measure.Protocol {
				pe, ok := errorsAsProtocol(err)
				if !ok || pe.Op != tt.wantOp || pe.Reply != tt.wantReply {
					t.Errorf("ProtocolError %+v, want Op %q Reply %q", pe, tt.wantOp, tt.wantReply)
				}
			}
			if !slices.Equal(res.Accepted, tt.wantAccepted) || !slices.Equal(res.Refused, tt.wantRefused) {
				t.Errorf("accepted %v refused %v, want %v %v", res.Accepted, res.Refused, tt.wantAccepted, tt.wantRefused)
			}
			if len(res.RefusedReplies) != len(res.Refused) {
				t.Errorf("%d refused replies for %d refused", len(res.RefusedReplies), len(res.Refused))
			}
			o := rec.only(t, measure.SMTPData)
			if o.Class != tt.wantClass || (o.Err == nil) != (tt.wantClass == measure.OK) {
				t.Errorf("observation %+v", o)
			}
			wantDelivered := 0
			if tt.wantClass == measure.OK {
				wantDelivered = 1
			}
			if msgs := be.messages(); len(msgs) != wantDelivered ||
				(wantDelivered == 1 && !slices.Equal(msgs[0].to, tt.wantAccepted)) {
				t.Errorf("server holds %+v", msgs)
			}
			// A refusal leaves the connection usable.
			if _, err := c.Send(context.Background(), "ok@example.test", []string{"u9@example.test"}, strings.NewReader(testMsg)); err != nil {
				t.Errorf("second Send on the same connection: %v", err)
			}
		})
	}
}

func TestSendWithoutRecipients(t *testing.T) {
	rec := &recorder{}
	be := &backend{}
	c := connect(t, Config{Address: startServer(t, be, TLSNone, nil), Timeout: 5 * time.Second, Observer: rec})
	if _, err := c.Send(context.Background(), "a@example.test", nil, strings.NewReader(testMsg)); err == nil {
		t.Error("Send with no recipients succeeded")
	}
	if n := len(rec.All()); n != 1 || len(be.messages()) != 0 {
		t.Errorf("%d observations (want only Connect), %d messages", n, len(be.messages()))
	}
}

func TestAuthFailureHidesPassword(t *testing.T) {
	for _, mech := range []string{AuthPlain, AuthLogin} {
		t.Run(mech, func(t *testing.T) {
			rec := &recorder{}
			addr := startServer(t, &backend{requireAuth: true}, TLSNone, nil)
			wrong := testPassword + "-wrong"
			_, err := Connect(context.Background(), Config{
				Address: addr, Timeout: 5 * time.Second, Auth: mech,
				Username: testUser, Password: wrong, Observer: rec,
			})
			var pe *measure.AuthError
			if !errors.As(err, &pe) || pe.Op != "AUTH" || !strings.HasPrefix(pe.Reply, "535 5.7.8") || measure.Classify(err) != measure.Auth {
				t.Fatalf("Connect error %v, want an AUTH 535 AuthError (class auth)", err)
			}
			o := rec.only(t, measure.SMTPConnect)
			for _, text := range []string{err.Error(), o.Err.Error(), fmt.Sprintf("%+v", o)} {
				if strings.Contains(text, wrong) || strings.Contains(text, testPassword) {
					t.Errorf("password leaked: %q", text)
				}
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("server echo of the password not redacted: %q", err)
			}
			if o.Class != measure.Auth {
				t.Errorf("class %q, want auth", o.Class)
			}
		})
	}
}

func TestAuthRequiredWithoutAuth(t *testing.T) {
	addr := startServer(t, &backend{requireAuth: true}, TLSNone, nil)
	c := connect(t, Config{Address: addr, Timeout: 5 * time.Second})
	_, err := c.Send(context.Background(), "a@example.test", []string{"b@example.test"}, strings.NewReader(testMsg))
	if pe, ok := errorsAsProtocol(err); !ok || pe.Op != "MAIL FROM" || !strings.HasPrefix(pe.Reply, "502") {
		t.Errorf("Send error %v, want MAIL FROM 502", err)
	}
}

// TestStalls covers servers that go silent: every call must return within
// the timeout plus slack, classified Timeout, and observed as such.
func TestStalls(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const slack = 2 * time.Second
	big := bytes.Repeat([]byte("0123456789012345678901234567890123456789012345678901234567890123456789\r\n"), 64<<10) // 4.5 MiB
	tests := []struct {
		name string
		at   stall
		fn   measure.Function
	}{
		{"silent server: no banner", stallBanner, measure.SMTPConnect},
		{"no reply to DATA", stallDataCommand, measure.SMTPData},
		{"no final reply", stallFinalReply, measure.SMTPData},
		{"body never read", stallBodyUnread, measure.SMTPData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			addr := scriptedServer(t, stallingSMTP(tt.at))
			cfg := Config{Address: addr, Timeout: timeout, Observer: rec}
			start := time.Now()
			c, err := Connect(context.Background(), cfg)
			if tt.fn == measure.SMTPData {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				defer c.Close()
				start = time.Now()
				_, err = c.Send(context.Background(), "a@example.test", []string{"b@example.test"}, bytes.NewReader(big))
			}
			elapsed := time.Since(start)
			if elapsed > timeout+slack {
				t.Errorf("returned after %v, timeout %v", elapsed, timeout)
			}
			if !errors.Is(err, measure.ErrTimeout) || measure.Classify(err) != measure.Timeout {
				t.Errorf("error %v (class %q), want a Timeout", err, measure.Classify(err))
			}
			o := rec.only(t, tt.fn)
			if o.Class != measure.Timeout || o.Duration < timeout-50*time.Millisecond || o.Duration > timeout+slack {
				t.Errorf("observation class %q duration %v", o.Class, o.Duration)
			}
			if tt.fn == measure.SMTPData {
				// The connection is gone: later calls fail at once, Quit is harmless.
				t0 := time.Now()
				if _, err := c.Send(context.Background(), "a@example.test", []string{"b@example.test"}, strings.NewReader(testMsg)); err == nil || time.Since(t0) > 100*time.Millisecond {
					t.Errorf("Send on a timed-out client: %v after %v", err, time.Since(t0))
				}
				if n := len(rec.All()); n != 2 {
					t.Errorf("%d observations, want 2 (Connect, the timed-out Send): a broken client's Send is not observed", n)
				}
				if err := c.Quit(context.Background()); err != nil {
					t.Errorf("Quit on a timed-out client: %v", err)
				}
			}
		})
	}
}

func TestContextDeadlineAndCancel(t *testing.T) {
	addr := scriptedServer(t, stallingSMTP(stallBanner))
	t.Run("deadline earlier than Timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := Connect(ctx, Config{Address: addr, Timeout: time.Minute})
		if d := time.Since(start); d > 2*time.Second || measure.Classify(err) != measure.Timeout {
			t.Errorf("after %v: %v (class %q)", d, err, measure.Classify(err))
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, err := Connect(ctx, Config{Address: addr, Timeout: time.Minute})
		if d := time.Since(start); d > 2*time.Second || !errors.Is(err, context.Canceled) {
			t.Errorf("after %v: %v, want context.Canceled", d, err)
		}
	})
}

func TestConnectionFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	hangUp := scriptedServer(t, func(c net.Conn, _ <-chan struct{}) { c.Close() })
	for _, addr := range []string{refused, hangUp} {
		rec := &recorder{}
		_, err := Connect(context.Background(), Config{Address: addr, Timeout: 2 * time.Second, Observer: rec})
		if measure.Classify(err) != measure.Connection {
			t.Errorf("%s: error %v classified %q, want connection", addr, err, measure.Classify(err))
		}
		if o := rec.only(t, measure.SMTPConnect); o.Class != measure.Connection {
			t.Errorf("%s: observation %+v", addr, o)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no address", Config{}},
		{"bad TLS mode", Config{Address: "127.0.0.1:1", TLS: "ssl"}},
		{"bad auth", Config{Address: "127.0.0.1:1", Auth: "cram-md5"}},
		{"bad HELO", Config{Address: "127.0.0.1:1", HeloName: "a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			tt.cfg.Observer = rec
			if _, err := Connect(context.Background(), tt.cfg); err == nil {
				t.Error("Connect accepted the config")
			}
			if n := len(rec.All()); n != 0 {
				t.Errorf("%d observations for an invalid config", n)
			}
		})
	}
}

func TestSendGeneratedMessage(t *testing.T) {
	gen, err := message.NewGenerator(1, []int{1 << 10, 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	be := &backend{}
	c := connect(t, Config{Address: startServer(t, be, TLSNone, nil), Timeout: 5 * time.Second})
	env := message.Envelope{ID: delivery.NewID(1, 1), From: "a@example.test", To: []string{"b@example.test"}, Subject: "s", Sent: time.Now()}
	for _, size := range gen.Sizes() {
		if _, err := c.Send(context.Background(), env.From, env.To, gen.Source(env, size, 3)); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
	}
	msgs := be.messages()
	for i, size := range gen.Sizes() {
		if want := gen.Message(env, size, 3); !bytes.Equal(msgs[i].data, want) {
			t.Errorf("size %d: server received %d bytes that differ from the %d generated", size, len(msgs[i].data), len(want))
		}
	}
}

// TestFirstExchangeNoStall: against every server behaviour around the TLS
// handshake (tickets written apart with Nagle on as Postfix does, no
// tickets, one ticket, TLS 1.2, resumed, a HelloRetryRequest), the
// handshake and the first exchange after it (EHLO; with implicit TLS the
// banner and EHLO) take no delayed ACK of the client's making: well under
// Linux's 40 ms minimum (package quickack, docs/tls.md). The median of
// five connects is the figure, so that one slow scheduling on a loaded
// machine does not decide.
func TestFirstExchangeNoStall(t *testing.T) {
	serverTLS, clientTLS := testCert(t)
	for _, b := range testutil.TLSBehaviours() {
		for _, mode := range []TLSMode{TLSStartTLS, TLSImplicit} {
			t.Run(b.Name+"/"+string(mode), func(t *testing.T) {
				srv := serverTLS.Clone()
				if b.Server != nil {
					b.Server(srv)
				}
				cli := clientTLS.Clone()
				if b.Resume {
					cli.ClientSessionCache = tls.NewLRUClientSessionCache(4)
				}
				addr := startServerOn(t, &backend{}, mode, srv, b.Listener)
				cfg := Config{Address: addr, TLS: mode, TLSConfig: cli, Timeout: 5 * time.Second}
				if b.Resume {
					connect(t, cfg).Quit(context.Background())
				}
				var first, hs []time.Duration
				for range 5 {
					c := connect(t, cfg)
					bd := c.Breakdown()
					c.Quit(context.Background())
					if bd.Resumed != b.Resume {
						t.Fatalf("resumed %v, want %v", bd.Resumed, b.Resume)
					}
					first, hs = append(first, bd.FirstExchange), append(hs, bd.Handshake)
				}
				slices.Sort(first)
				slices.Sort(hs)
				t.Logf("first exchange %v, handshake %v", first, hs)
				if first[2] >= stallBound || hs[2] >= stallBound {
					t.Errorf("median first exchange %v, handshake %v: a delayed-ACK stall (≥ %v)", first[2], hs[2], stallBound)
				}
			})
		}
	}
}

// stallBound separates a delayed-ACK stall (40 ms at least on Linux) from
// a loopback exchange (well under 2 ms unloaded).
const stallBound = 20 * time.Millisecond

// Send's DATA writer takes a generated body as is (message.Source checks
// for this interface; without it every body would be scanned again).
var _ message.AsIsWriter = (*smtp.DataCommand)(nil)
