package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/testing/testcert"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// testCert is a self-signed server certificate for 127.0.0.1 and
// localhost, written to PEM files in a temporary directory.
type testCert struct {
	server            *tls.Config
	certFile, keyFile string
}

func newTestCert(t *testing.T, c *testcert.Cert) testCert {
	t.Helper()
	tc := testCert{server: c.ServerConfig()}
	tc.certFile, tc.keyFile = c.WritePEM(t)
	return tc
}

func validCert(t *testing.T) testCert {
	return newTestCert(t, testcert.Make(t, testcert.Options{}))
}

func TestClient(t *testing.T) {
	cert := validCert(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	os.WriteFile(garbage, []byte("not a certificate\n"), 0o644)
	tests := []struct {
		name       string
		ep         workload.Endpoint
		wantNil    bool
		wantErr    string
		serverName string
		minVersion uint16
		roots      bool
		cache      bool
		insecure   bool
	}{
		{name: "none", ep: workload.Endpoint{Address: "127.0.0.1:143", TLS: "none"}, wantNil: true},
		{name: "empty mode", ep: workload.Endpoint{Address: "127.0.0.1:143"}, wantNil: true},
		{name: "starttls defaults", ep: workload.Endpoint{Address: "mail.example.test:143", TLS: "starttls"},
			serverName: "mail.example.test", minVersion: tls.VersionTLS12},
		{name: "implicit, explicit name, 1.3, resumption, CA", ep: workload.Endpoint{Address: "127.0.0.1:993", TLS: "implicit",
			ServerName: "sut.mailbench.test", MinTLSVersion: "1.3", SessionResumption: true, CAFile: cert.certFile},
			serverName: "sut.mailbench.test", minVersion: tls.VersionTLS13, roots: true, cache: true},
		{name: "insecure", ep: workload.Endpoint{Address: "[::1]:993", TLS: "implicit", InsecureSkipVerify: true, MinTLSVersion: "1.2"},
			serverName: "::1", minVersion: tls.VersionTLS12, insecure: true},
		{name: "missing CA file", ep: workload.Endpoint{Address: "h:1", TLS: "implicit", CAFile: filepath.Join(t.TempDir(), "nope.pem")}, wantErr: "ca_file"},
		{name: "CA file without certificates", ep: workload.Endpoint{Address: "h:1", TLS: "implicit", CAFile: garbage}, wantErr: "no PEM certificate"},
		{name: "bad min version", ep: workload.Endpoint{Address: "h:1", TLS: "implicit", MinTLSVersion: "1.1"}, wantErr: "min_tls_version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := Client(tt.ep)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNil {
				if tc != nil {
					t.Fatalf("config %+v, want nil", tc)
				}
				return
			}
			if tc.ServerName != tt.serverName || tc.MinVersion != tt.minVersion || (tc.RootCAs != nil) != tt.roots ||
				(tc.ClientSessionCache != nil) != tt.cache || tc.InsecureSkipVerify != tt.insecure {
				t.Errorf("config: name %q min %x roots %v cache %v insecure %v", tc.ServerName, tc.MinVersion,
					tc.RootCAs != nil, tc.ClientSessionCache != nil, tc.InsecureSkipVerify)
			}
			if tt.cache && tc.Clone().ClientSessionCache != tc.ClientSessionCache {
				t.Error("a clone does not share the session cache")
			}
		})
	}
	// Two endpoints do not share a cache.
	ep := workload.Endpoint{Address: "127.0.0.1:993", TLS: "implicit", SessionResumption: true}
	a, _ := Client(ep)
	b, _ := Client(ep)
	if a.ClientSessionCache == b.ClientSessionCache {
		t.Error("two Client calls share one session cache")
	}
}

func TestServer(t *testing.T) {
	cert := validCert(t)
	tests := []struct {
		name              string
		certFile, keyFile string
		wantErr           bool
	}{
		{"generated", "", "", false},
		{"files", cert.certFile, cert.keyFile, false},
		{"cert only", cert.certFile, "", true},
		{"key only", "", cert.keyFile, true},
		{"swapped", cert.keyFile, cert.certFile, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := Server(tt.certFile, tt.keyFile)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(srv.Certificates) != 1 || srv.MinVersion != tls.VersionTLS12 {
				t.Fatalf("server config: %d certificates, min %x", len(srv.Certificates), srv.MinVersion)
			}
			// The certificate is usable in a handshake for 127.0.0.1.
			leaf, err := x509.ParseCertificate(srv.Certificates[0].Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AddCert(leaf)
			if err := handshake(t, srv, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err != nil {
				t.Errorf("handshake: %v", err)
			}
		})
	}
}

// handshake runs one client-server handshake over an in-memory pipe.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	server = server.Clone()
	server.SessionTicketsDisabled = true // a pipe has no buffer for tickets nobody reads
	go func() {
		err := tls.Server(b, server).HandshakeContext(ctx)
		b.Close()
		done <- err
	}()
	err := tls.Client(a, client).HandshakeContext(ctx)
	<-done
	return err
}

// startHandshakeServer accepts implicit-TLS connections on 127.0.0.1,
// runs the handshake and closes: enough for handshake failures.
func startHandshakeServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				tls.Server(c, cfg).Handshake()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestHandshakeErrors checks that a bad certificate, a wrong server name
// and a protocol version mismatch are each a TLS-class error with a clear
// reason, for both protocol clients.
func TestHandshakeErrors(t *testing.T) {
	good := validCert(t)
	expired := newTestCert(t, testcert.Expired(t))
	tls12only := good.server.Clone()
	tls12only.MaxVersion = tls.VersionTLS12
	tls13only := good.server.Clone()
	tls13only.MinVersion = tls.VersionTLS13
	maxTLS12 := func(tc *tls.Config) { tc.MaxVersion = tls.VersionTLS12 }

	tests := []struct {
		name   string
		server *tls.Config
		ep     workload.Endpoint
		tweak  func(*tls.Config)
		reason string
	}{
		{"untrusted certificate", good.server, workload.Endpoint{}, nil, measure.ReasonUntrusted},
		{"wrong server name", good.server, workload.Endpoint{CAFile: good.certFile, ServerName: "imap.wrong.test"}, nil, measure.ReasonServerName},
		{"expired certificate", expired.server, workload.Endpoint{CAFile: expired.certFile}, nil, measure.ReasonExpired},
		{"client wants 1.3, server at most 1.2", tls12only, workload.Endpoint{CAFile: good.certFile, MinTLSVersion: "1.3"}, nil, measure.ReasonVersion},
		{"client at most 1.2, server wants 1.3", tls13only, workload.Endpoint{CAFile: good.certFile}, maxTLS12, measure.ReasonVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startHandshakeServer(t, tt.server)
			ep := tt.ep
			ep.Address, ep.TLS = addr, "implicit"
			tc, err := Client(ep)
			if err != nil {
				t.Fatal(err)
			}
			if tt.tweak != nil {
				tt.tweak(tc)
			}
			var errs []error
			var obs []measure.Observation
			rec := measure.ObserverFunc(func(o measure.Observation) { obs = append(obs, o) })
			_, err = imapclient.Connect(context.Background(), imapclient.Config{
				Address: addr, TLS: imapclient.TLSImplicit, TLSConfig: tc, Timeout: 5 * time.Second, Observer: rec,
			}, "user1", "secret-pw")
			errs = append(errs, err)
			_, err = smtpclient.Connect(context.Background(), smtpclient.Config{
				Address: addr, TLS: smtpclient.TLSImplicit, TLSConfig: tc, Timeout: 5 * time.Second, Observer: rec,
				Auth: smtpclient.AuthPlain, Username: "user1", Password: "secret-pw",
			})
			errs = append(errs, err)
			for i, err := range errs {
				if err == nil {
					t.Fatalf("client %d connected", i)
				}
				if c := measure.Classify(err); c != measure.TLS {
					t.Errorf("client %d: %v classified %q, want tls", i, err, c)
				}
				if r := measure.TLSReason(err); r != tt.reason {
					t.Errorf("client %d: measure.TLSReason(%v) = %q, want %q", i, err, r, tt.reason)
				}
				if strings.Contains(err.Error(), "secret-pw") {
					t.Errorf("password in %v", err)
				}
			}
			if len(obs) != 2 {
				t.Fatalf("%d observations, want 2", len(obs))
			}
			for _, o := range obs {
				if o.Class != measure.TLS || o.Connect == nil || o.Connect.TLSUsed || o.Connect.TCP <= 0 {
					t.Errorf("observation %s: class %q phases %+v", o.Function, o.Class, o.Connect)
				}
			}
		})
	}
}

func TestReasonNonTLS(t *testing.T) {
	for _, err := range []error{nil, errors.New("boom"), &net.OpError{Op: "dial", Err: errors.New("refused")}, measure.ErrTimeout} {
		if r := measure.TLSReason(err); r != "" {
			t.Errorf("measure.TLSReason(%v) = %q, want empty", err, r)
		}
	}
	if r := measure.TLSReason(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}); r != measure.ReasonNotTLS {
		t.Errorf("record header error: %q", r)
	}
	remote := &net.OpError{Op: "remote error", Err: tls.AlertError(42)}
	if r, c := measure.TLSReason(remote), measure.Classify(remote); !strings.HasPrefix(r, measure.ReasonRejected) || c != measure.TLS {
		t.Errorf("remote bad_certificate alert: reason %q class %q", r, c)
	}
}

// TestEmbeddedTLS runs STARTTLS against the embedded target with the
// configuration EmbeddedTLS and EmbeddedClient make, and checks that
// resumption is counted only when the endpoint asks for it.
func TestEmbeddedTLS(t *testing.T) {
	srv, roots, err := EmbeddedTLS()
	if err != nil {
		t.Fatal(err)
	}
	tg, err := demo.Start(context.Background(), demo.Options{
		Users: []workload.User{{Login: "user1", Password: "pw"}}, TLSConfig: srv,
		IMAPAddr: "127.0.0.1:0", SMTPAddr: "127.0.0.1:0", OpTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })

	for _, resume := range []bool{false, true} {
		ep := workload.Endpoint{TLS: "starttls", SessionResumption: resume}
		imapTLS, err := EmbeddedClient(ep, roots)
		if err != nil {
			t.Fatal(err)
		}
		smtpTLS, _ := EmbeddedClient(ep, roots)
		var resumed []bool
		for range 2 {
			var obs []measure.Observation
			rec := measure.ObserverFunc(func(o measure.Observation) { obs = append(obs, o) })
			c, err := imapclient.Connect(context.Background(), imapclient.Config{
				Address: tg.IMAPAddr(), TLS: imapclient.TLSStartTLS, TLSConfig: imapTLS, Timeout: 5 * time.Second, Observer: rec,
			}, "user1", "pw")
			if err != nil {
				t.Fatalf("IMAP: %v", err)
			}
			if _, err := c.List(context.Background()); err != nil { // reads TLS 1.3 tickets
				t.Fatal(err)
			}
			c.Logout(context.Background())
			s, err := smtpclient.Connect(context.Background(), smtpclient.Config{
				Address: tg.SMTPAddr(), TLS: smtpclient.TLSStartTLS, TLSConfig: smtpTLS, Timeout: 5 * time.Second, Observer: rec,
				Auth: smtpclient.AuthPlain, Username: "user1", Password: "pw",
			})
			if err != nil {
				t.Fatalf("SMTP: %v", err)
			}
			if _, err := s.Send(context.Background(), "user1@example.test", []string{"user1@example.test"}, strings.NewReader("Subject: x\r\n\r\nhi\r\n")); err != nil {
				t.Fatal(err)
			}
			s.Quit(context.Background())
			for _, o := range obs {
				if o.Connect == nil {
					continue
				}
				if !o.Connect.TLSUsed || o.Connect.TLS <= 0 {
					t.Errorf("%s: phases %+v", o.Function, o.Connect)
				}
				resumed = append(resumed, o.Connect.Resumed)
			}
		}
		want := []bool{false, false, resume, resume}
		if len(resumed) != 4 || resumed[0] != want[0] || resumed[1] != want[1] || resumed[2] != want[2] || resumed[3] != want[3] {
			t.Errorf("resumption %v: resumed per connect (IMAP, SMTP, IMAP, SMTP) %v, want %v", resume, resumed, want)
		}
	}
}

// TestClassifyTLSError pins how measure.Classify treats a wrapped handshake
// failure: TLS unless a deadline or the peer's hang-up cut it short.
func TestClassifyTLSError(t *testing.T) {
	for _, tt := range []struct {
		cause error
		want  measure.ErrorClass
	}{
		{errors.New("tls: server selected unsupported protocol version 301"), measure.TLS},
		{os.ErrDeadlineExceeded, measure.Timeout},
		{io.EOF, measure.Connection},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, measure.Connection},
		{&net.OpError{Op: "remote error", Err: tls.AlertError(70)}, measure.TLS},
	} {
		err := fmt.Errorf("client: %w", &measure.TLSError{Op: "TLS handshake", Err: tt.cause})
		if got := measure.Classify(err); got != tt.want {
			t.Errorf("Classify(%v) = %q, want %q", err, got, tt.want)
		}
	}
}

// TestReasonRedacted checks that a reason survives a client's redaction,
// which keeps the text but not the typed chain.
func TestReasonRedacted(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"imapclient: TLS handshake: tls: failed to verify certificate: x509: certificate is valid for sut.***.test, localhost, not imap.wrong.test", measure.ReasonServerName},
		{"x509: certificate signed by unknown authority", measure.ReasonUntrusted},
		{"x509: certificate has expired or is not yet valid: current time", measure.ReasonExpired},
		{"remote error: tls: protocol version not supported", measure.ReasonVersion},
		{"tls: something new", measure.ReasonHandshake},
	} {
		err := fmt.Errorf("%s%w", tt.text, tls.AlertError(40))
		if got := measure.TLSReason(err); got != tt.want {
			t.Errorf("measure.TLSReason(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
