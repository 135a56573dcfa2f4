package demo

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
	"github.com/mailbench/mailbench/internal/gosmtp"
	"github.com/mailbench/mailbench/workload"
)

// testTLS returns a server configuration with a fresh self-signed
// certificate for 127.0.0.1 and a client configuration that trusts it.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	server, pool, err := tlsconf.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return server, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// imapDial connects over implicit TLS or STARTTLS and logs in; a watchdog
// closes the client after testTimeout.
func imapDial(t *testing.T, addr string, implicit bool, clientTLS *tls.Config, u workload.User) *imapclient.Client {
	t.Helper()
	opts := &imapclient.Options{Dialer: &net.Dialer{Timeout: testTimeout}, TLSConfig: clientTLS}
	dial := imapclient.DialStartTLS
	if implicit {
		dial = imapclient.DialTLS
	}
	c, err := dial(addr, opts)
	if err != nil {
		t.Fatalf("dial IMAP (implicit %v): %v", implicit, err)
	}
	watchdog := time.AfterFunc(testTimeout, func() { c.Close() })
	t.Cleanup(func() { watchdog.Stop(); c.Close() })
	if err := c.Login(u.Login, u.Password).Wait(); err != nil {
		t.Fatalf("Login(%q) (implicit %v) = %v", u.Login, implicit, err)
	}
	return c
}

// smtpDial connects over implicit TLS or STARTTLS and says EHLO.
func smtpDial(t *testing.T, addr string, implicit bool, clientTLS *tls.Config) *smtp.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(testTimeout))
	var c *smtp.Client
	if implicit {
		c = smtp.NewClient(tls.Client(conn, clientTLS))
	} else if c, err = smtp.NewClientStartTLS(conn, clientTLS); err != nil {
		conn.Close()
		t.Fatalf("SMTP STARTTLS: %v", err)
	}
	c.CommandTimeout, c.SubmissionTimeout = testTimeout, testTimeout
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("SMTP EHLO (implicit %v): %v", implicit, err)
	}
	return c
}

// Each protocol serves implicit TLS or STARTTLS as its own option says;
// where the listener is implicit, STARTTLS is not offered.
func TestImplicitTLS(t *testing.T) {
	tests := []struct {
		name                       string
		imapImplicit, smtpImplicit bool
	}{
		{"both implicit", true, true},
		{"imap implicit smtp starttls", true, false},
		{"imap starttls smtp implicit", false, true},
		{"both starttls", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverTLS, clientTLS := testTLS(t)
			tg := startTarget(t, Options{TLSConfig: serverTLS, IMAPImplicitTLS: tt.imapImplicit, SMTPImplicitTLS: tt.smtpImplicit})
			u := testUsers[0]

			sc := smtpDial(t, tg.SMTPAddr(), tt.smtpImplicit, clientTLS)
			if state, ok := sc.TLSConnectionState(); !ok || !state.HandshakeComplete {
				t.Fatalf("SMTP connection not over TLS")
			}
			if offered, _ := sc.Extension("STARTTLS"); offered {
				t.Errorf("STARTTLS offered on an already secure SMTP connection")
			}
			msg := testMessage("implicit-" + tt.name)
			if err := sc.SendMail("sender@client.test", []string{address(u)}, bytes.NewReader(msg)); err != nil {
				t.Fatalf("SendMail() = %v", err)
			}
			sc.Quit()

			ic := imapDial(t, tg.IMAPAddr(), tt.imapImplicit, clientTLS, u)
			if ic.Caps().Has(imap.CapStartTLS) {
				t.Errorf("STARTTLS offered on an already secure IMAP connection: %v", ic.Caps())
			}
			sel, err := ic.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait()
			if err != nil || sel.NumMessages != 1 {
				t.Fatalf("Select(INBOX) = %+v, %v; want the 1 message sent", sel, err)
			}
			section := &imap.FetchItemBodySection{Peek: true}
			msgs, err := ic.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{section}}).Collect()
			if err != nil || len(msgs) != 1 {
				t.Fatalf("Fetch(1) = %d messages, %v", len(msgs), err)
			}
			got := msgs[0].FindBodySection(section)
			if i := bytes.Index(got, msg); i < 0 || !bytes.Contains(got[:i], []byte("with ESMTPS;")) {
				t.Errorf("delivered message does not record TLS in its Received header: %q", got)
			}
		})
	}
}

// A plaintext client on an implicit-TLS listener fails within the
// handshake timeout instead of waiting for a greeting forever, whether it
// waits for the server to speak first or speaks first itself.
func TestImplicitTLSPlaintextClientFails(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	const handshakeTimeout = 300 * time.Millisecond
	tg := startTarget(t, Options{TLSConfig: serverTLS, IMAPImplicitTLS: true, SMTPImplicitTLS: true, TLSHandshakeTimeout: handshakeTimeout})
	u := testUsers[0]
	tests := []struct {
		name string
		run  func() error
	}{
		{"raw IMAP client waits for greeting", func() error {
			conn, err := net.DialTimeout("tcp", tg.IMAPAddr(), testTimeout)
			if err != nil {
				return err
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(testTimeout))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err == nil {
				t.Logf("plaintext greeting %q", line)
			}
			return err
		}},
		{"imapclient pipelines LOGIN", func() error {
			c, err := imapclient.DialInsecure(tg.IMAPAddr(), &imapclient.Options{Dialer: &net.Dialer{Timeout: testTimeout}})
			if err != nil {
				return err
			}
			defer c.Close()
			watchdog := time.AfterFunc(testTimeout, func() { c.Close() })
			defer watchdog.Stop()
			return c.Login(u.Login, u.Password).Wait()
		}},
		{"smtp client waits for banner", func() error {
			conn, err := net.DialTimeout("tcp", tg.SMTPAddr(), testTimeout)
			if err != nil {
				return err
			}
			c := smtp.NewClient(conn)
			c.CommandTimeout = testTimeout
			defer c.Close()
			return c.Hello("client.test")
		}},
		{"raw client speaks first", func() error {
			conn, err := net.DialTimeout("tcp", tg.SMTPAddr(), testTimeout)
			if err != nil {
				return err
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(testTimeout))
			if _, err := conn.Write([]byte("EHLO client.test\r\n")); err != nil {
				return err
			}
			buf := make([]byte, 512)
			for {
				n, err := conn.Read(buf)
				if bytes.HasPrefix(buf[:n], []byte("220")) || bytes.HasPrefix(buf[:n], []byte("250")) {
					return nil // a plaintext answer: the test fails below
				}
				if err != nil {
					return err
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := tt.run()
			took := time.Since(start)
			if err == nil {
				t.Fatal("a plaintext client succeeded on an implicit-TLS listener")
			}
			if took >= testTimeout-time.Second {
				t.Errorf("plaintext client failed only after %v (%v): the server did not end the handshake", took, err)
			}
			if strings.Contains(err.Error(), u.Password) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
	// The listeners still serve TLS clients afterwards.
	imapDial(t, tg.IMAPAddr(), true, clientTLS, u).Logout()
	smtpDial(t, tg.SMTPAddr(), true, clientTLS).Quit()
}

// The relay client secures its connection as RelayTLS says and as the
// relay host allows.
func TestRelayTLS(t *testing.T) {
	relayServerTLS, _, err := tlsconf.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	otherServerTLS, _, err := tlsconf.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	pinned := tlsconf.PinnedClientTLS(relayServerTLS.Certificates[0].Certificate[0])
	pinnedOther := tlsconf.PinnedClientTLS(otherServerTLS.Certificates[0].Certificate[0])
	const messages = 3
	tests := []struct {
		name       string
		hostTLS    string // "none", "starttls", "implicit"
		mode       RelayTLSMode
		clientTLS  *tls.Config
		wantTLS    bool
		wantConns  int // connections the relay host saw (the worker keeps one for the next message)
		wantFailed bool
		opTimeout  time.Duration // default 1 s
	}{
		{"opportunistic to plaintext host", "none", RelayOpportunisticTLS, nil, false, 1, false, 0},
		// The first message probes with a plaintext EHLO, then opens a
		// connection with STARTTLS that the rest reuse.
		{"opportunistic to starttls host", "starttls", RelayOpportunisticTLS, nil, true, 2, false, 0},
		{"opportunistic pinned", "starttls", RelayOpportunisticTLS, pinned, true, 2, false, 0},
		{"none to starttls host", "starttls", RelayNoTLS, nil, false, 1, false, 0},
		{"implicit", "implicit", RelayImplicitTLS, nil, true, 1, false, 0},
		{"implicit pinned", "implicit", RelayImplicitTLS, pinned, true, 1, false, 0},
		{"implicit wrong pin", "implicit", RelayImplicitTLS, pinnedOther, false, 0, true, 0},
		{"starttls wrong pin", "starttls", RelayOpportunisticTLS, pinnedOther, false, -1, true, 0},
		// The host waits for a ClientHello, the relay for a banner.
		{"plaintext to implicit host", "implicit", RelayNoTLS, nil, false, 0, true, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRelayServer(t, func(rs *relayServer) {
				if tt.hostTLS != "none" {
					rs.tlsConfig = relayServerTLS
				}
				rs.implicit = tt.hostTLS == "implicit"
			})
			tg := startTarget(t, Options{
				RelayAddr: rs.addr, RelayTLS: tt.mode, RelayTLSConfig: tt.clientTLS,
				RelayRetryDelay: 10 * time.Millisecond, RelayAttempts: 2, RelayWorkers: 1,
				OpTimeout: cmp.Or(tt.opTimeout, time.Second),
			})
			for i := range messages {
				msg := testMessage("relay-tls")
				if err := sendMail(tg.SMTPAddr(), "sender@client.test", []string{"bob@remote.test"}, msg, nil); err != nil {
					t.Fatalf("sendMail() #%d = %v", i+1, err)
				}
				// One at a time, so that the connection count is exact.
				waitFor(t, "relay to finish", func() bool { return tg.Stats().Queue == 0 })
			}
			s := tg.Stats()
			got := rs.received()
			if tt.wantFailed {
				if s.RelayFailed != messages || s.Relayed != 0 || len(got) != 0 {
					t.Errorf("Stats() = %+v, relay host kept %d messages; want all %d failed", s, len(got), messages)
				}
				return
			}
			if s.Relayed != messages || s.RelayFailed != 0 || len(got) != messages {
				t.Fatalf("Stats() = %+v, relay host kept %d messages; want %d relayed", s, len(got), messages)
			}
			for i, m := range got {
				if m.tls != tt.wantTLS {
					t.Errorf("message %d over TLS %v, want %v", i+1, m.tls, tt.wantTLS)
				}
			}
			rs.mu.Lock()
			conns := rs.conns
			rs.mu.Unlock()
			if tt.wantConns >= 0 && conns != tt.wantConns {
				t.Errorf("relay host saw %d connections, want %d", conns, tt.wantConns)
			}
		})
	}
}

func TestPinnedClientTLS(t *testing.T) {
	serverTLS, _ := testTLS(t)
	otherTLS, _ := testTLS(t)
	der := serverTLS.Certificates[0].Certificate[0]
	tests := []struct {
		name   string
		server *tls.Config
		pin    []byte
		wantOK bool
	}{
		{"pinned certificate", serverTLS, der, true},
		{"other certificate", otherTLS, der, false},
		{"empty pin", serverTLS, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := tls.Listen("tcp", "127.0.0.1:0", tt.server)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(testTimeout))
				c.(*tls.Conn).Handshake()
			}()
			// A name the certificate does not carry: the pin alone decides.
			cfg := tlsconf.PinnedClientTLS(tt.pin)
			cfg.ServerName = "not-in-the-certificate.test"
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: testTimeout}, Config: cfg}
			c, err := d.Dial("tcp", ln.Addr().String())
			if err == nil {
				c.Close()
			}
			if (err == nil) != tt.wantOK {
				t.Errorf("handshake error = %v, want success %v", err, tt.wantOK)
			}
		})
	}
}
