package integration

// TLS against the loopback Dovecot + Postfix of scripts/sut/up: STARTTLS
// and implicit TLS with the SUT's self-signed certificate as ca_file,
// session resumption counted only when it happened, and certificate
// failures classified as TLS errors.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

const (
	tlsIMAPSAddr  = "127.0.0.1:1993"     // Dovecot, implicit TLS
	tlsServerName = "sut.mailbench.test" // the SUT certificate's name
	tlsTimeout    = 10 * time.Second
)

// tlsSUTCert returns the SUT's self-signed certificate (scripts/sut/up
// writes it to $MAILBENCH_SUT_DIR/tls/cert.pem), skipping or failing as
// needSUT does when the SUT or the file is missing.
func tlsSUTCert(t *testing.T) string {
	t.Helper()
	needSUT(t)
	path := filepath.Join(sutDir(), "tls", "cert.pem")
	if _, err := os.Stat(path); err != nil {
		unavailable(t, "SUT certificate: "+err.Error())
	}
	return path
}

// tlsUser is a SUT user and its password.
func tlsUser(t *testing.T) (string, string) {
	t.Helper()
	cfg := sutConfig(t)
	pw, err := cfg.Password()
	if err != nil {
		t.Fatal(err)
	}
	return "user1", pw
}

// tlsConnectIMAP connects once and returns the Connect observation.
func tlsConnectIMAP(t *testing.T, ep workload.Endpoint, tc *tlsConfigHolder) (measure.Observation, error) {
	t.Helper()
	login, pw := tlsUser(t)
	var got measure.Observation
	c, err := imapclient.Connect(context.Background(), imapclient.Config{
		Address: ep.Address, TLS: ep.TLS, TLSConfig: tc.cfg, Timeout: tlsTimeout, Auth: ep.Auth,
		Observer: measure.ObserverFunc(func(o measure.Observation) {
			if o.Function == measure.IMAPConnect {
				got = o
			}
		}),
	}, login, pw)
	if err == nil {
		// A command after login reads any TLS 1.3 session ticket.
		if _, lerr := c.List(context.Background()); lerr != nil {
			t.Errorf("LIST: %v", lerr)
		}
		if lerr := c.Logout(context.Background()); lerr != nil {
			t.Errorf("LOGOUT: %v", lerr)
		}
	}
	return got, err
}

// tlsConnectSMTP connects once, sends QUIT and returns the Connect observation.
func tlsConnectSMTP(t *testing.T, ep workload.Endpoint, tc *tlsConfigHolder, auth bool) (measure.Observation, error) {
	t.Helper()
	cfg := smtpclient.Config{
		Address: ep.Address, TLS: ep.TLS, TLSConfig: tc.cfg, Timeout: tlsTimeout,
	}
	if auth {
		cfg.Auth = smtpclient.AuthPlain
		cfg.Username, cfg.Password = tlsUser(t)
	}
	var got measure.Observation
	cfg.Observer = measure.ObserverFunc(func(o measure.Observation) {
		if o.Function == measure.SMTPConnect {
			got = o
		}
	})
	c, err := smtpclient.Connect(context.Background(), cfg)
	if err == nil {
		if qerr := c.Quit(context.Background()); qerr != nil {
			t.Errorf("QUIT: %v", qerr)
		}
	}
	return got, err
}

// tlsConfigHolder is one endpoint's client TLS configuration, shared by
// the connects of a test as bench shares it among simulated users.
//
// full counts full handshakes independently of DidResume: crypto/tls calls
// VerifyPeerCertificate after verifying a certificate chain, which a
// resumed handshake does not send.
type tlsConfigHolder struct {
	cfg  *tls.Config
	full atomic.Int64
}

func tlsClient(t *testing.T, ep workload.Endpoint) *tlsConfigHolder {
	t.Helper()
	tc, err := tlsconf.Client(ep)
	if err != nil {
		t.Fatal(err)
	}
	h := &tlsConfigHolder{cfg: tc}
	tc.VerifyPeerCertificate = func([][]byte, [][]*x509.Certificate) error {
		h.full.Add(1)
		return nil
	}
	return h
}

type tlsEndpointCase struct {
	name    string
	ep      workload.Endpoint
	connect func(t *testing.T, ep workload.Endpoint, tc *tlsConfigHolder) (measure.Observation, error)
	// resumes says whether the server always resumes a Go client's
	// session. Postfix does (TLS 1.3 tickets). Dovecot 2.3 only sometimes:
	// each imap-login process has its own ticket keys, so a ticket resumes
	// only on the process that issued it.
	resumes bool
}

func tlsCases(ca string) []tlsEndpointCase {
	imap := func(t *testing.T, ep workload.Endpoint, tc *tlsConfigHolder) (measure.Observation, error) {
		return tlsConnectIMAP(t, ep, tc)
	}
	smtp := func(t *testing.T, ep workload.Endpoint, tc *tlsConfigHolder) (measure.Observation, error) {
		return tlsConnectSMTP(t, ep, tc, false)
	}
	smtpAuth := func(t *testing.T, ep workload.Endpoint, tc *tlsConfigHolder) (measure.Observation, error) {
		return tlsConnectSMTP(t, ep, tc, true)
	}
	return []tlsEndpointCase{
		{"Dovecot STARTTLS, LOGIN", workload.Endpoint{Address: imapAddr, TLS: "starttls", CAFile: ca, ServerName: tlsServerName, Auth: "login"}, imap, false},
		{"Dovecot implicit, AUTHENTICATE PLAIN", workload.Endpoint{Address: tlsIMAPSAddr, TLS: "implicit", CAFile: ca, ServerName: tlsServerName, Auth: "plain"}, imap, false},
		{"Postfix STARTTLS", workload.Endpoint{Address: smtpAddr, TLS: "starttls", CAFile: ca, ServerName: tlsServerName}, smtp, true},
		{"Postfix STARTTLS, AUTH PLAIN", workload.Endpoint{Address: smtpAddr, TLS: "starttls", CAFile: ca, ServerName: tlsServerName}, smtpAuth, true},
	}
}

// TestTLSSUTConnect connects to every TLS endpoint twice, with and without
// a shared session cache: every connect completes a verified handshake
// with all phases timed; the second connect resumes only with the cache and
// only on a server that resumes sessions (see tlsEndpointCase.resumes).
func TestTLSSUTConnect(t *testing.T) {
	ca := tlsSUTCert(t)
	for _, tc := range tlsCases(ca) {
		for _, resume := range []bool{false, true} {
			name := tc.name + ", no session cache"
			if resume {
				name = tc.name + ", shared session cache"
			}
			t.Run(name, func(t *testing.T) {
				ep := tc.ep
				ep.SessionResumption = resume
				holder := tlsClient(t, ep)
				var resumed []bool
				for range 4 {
					fullBefore := holder.full.Load()
					o, err := tc.connect(t, ep, holder)
					if err != nil {
						t.Fatalf("connect: %v (reason: %s)", err, measure.TLSReason(err))
					}
					p := o.Connect
					if o.Class != measure.OK || p == nil || !p.TLSUsed || p.TCP <= 0 || p.TLS <= 0 || p.Greeting <= 0 {
						t.Fatalf("observation %+v, phases %+v", o, p)
					}
					if (p.Auth > 0) != (ep.Auth != "" || tc.name == "Postfix STARTTLS, AUTH PLAIN") {
						t.Errorf("auth phase %v", p.Auth)
					}
					if p.TCP+p.TLS+p.Greeting+p.Auth > o.Duration {
						t.Errorf("phases %+v exceed the connect %v", p, o.Duration)
					}
					if full := holder.full.Load() > fullBefore; p.Resumed == full {
						t.Errorf("Resumed %v, but a full handshake %v (certificate verified)", p.Resumed, full)
					}
					resumed = append(resumed, p.Resumed)
				}
				n := 0
				for _, r := range resumed {
					if r {
						n++
					}
				}
				switch {
				case resumed[0] || (!resume && n > 0):
					t.Errorf("resumed per connect %v: a resumption without an earlier session", resumed)
				case resume && tc.resumes && n != 3:
					t.Errorf("resumed per connect %v, want [false true true true]", resumed)
				}
				t.Logf("resumed per connect %v", resumed)
			})
		}
	}
}

// TestTLSSUTFailures checks that a wrong server name and an untrusted
// certificate fail the connect with a TLS-class error and a clear reason.
func TestTLSSUTFailures(t *testing.T) {
	ca := tlsSUTCert(t)
	for _, tc := range tlsCases(ca)[:3] {
		for _, bad := range []struct {
			name   string
			tweak  func(*workload.Endpoint)
			reason string
		}{
			{"wrong server name", func(ep *workload.Endpoint) { ep.ServerName = "imap.wrong.test" }, measure.ReasonServerName},
			{"untrusted certificate", func(ep *workload.Endpoint) { ep.CAFile = "" }, measure.ReasonUntrusted},
		} {
			t.Run(tc.name+", "+bad.name, func(t *testing.T) {
				ep := tc.ep
				bad.tweak(&ep)
				o, err := tc.connect(t, ep, tlsClient(t, ep))
				if err == nil {
					t.Fatal("connected")
				}
				if c := measure.Classify(err); c != measure.TLS || o.Class != measure.TLS {
					t.Errorf("%v classified %q (observation %q), want tls", err, c, o.Class)
				}
				if r := measure.TLSReason(err); r != bad.reason {
					t.Errorf("Reason(%v) = %q, want %q", err, r, bad.reason)
				}
				if o.Connect == nil || o.Connect.TLSUsed || o.Connect.TCP <= 0 {
					t.Errorf("phases %+v", o.Connect)
				}
			})
		}
	}
}
