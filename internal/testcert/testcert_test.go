package testcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"
)

// handshake runs one handshake over a 127.0.0.1 connection (a pipe has no
// buffer for the alert a failing client sends) and returns the client's error.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tls.Server(c, server).HandshakeContext(ctx)
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = tls.Client(c, client).HandshakeContext(ctx)
	c.Close()
	<-done
	return err
}

func TestCertificates(t *testing.T) {
	srv, pool := New(t)
	exp := Expired(t)
	other, _ := New(t, "mail.example.test")
	tests := []struct {
		name       string
		server     *tls.Config
		roots      *x509.CertPool
		serverName string
		wantErr    any // nil, or a pointer to the error type wanted
	}{
		{"valid for 127.0.0.1", srv, pool, "127.0.0.1", nil},
		{"valid for localhost", srv, pool, "localhost", nil},
		{"wrong name", srv, pool, "imap.wrong.test", &x509.HostnameError{}},
		{"untrusted", srv, x509.NewCertPool(), "127.0.0.1", &x509.UnknownAuthorityError{}},
		{"expired", exp.ServerConfig(), exp.Pool(), "127.0.0.1", &x509.CertificateInvalidError{}},
		{"other host only", other, pool, "mail.example.test", &x509.UnknownAuthorityError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := handshake(t, tt.server, &tls.Config{RootCAs: tt.roots, ServerName: tt.serverName})
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("handshake: %v", err)
				}
			case *x509.HostnameError:
				if !errors.As(err, want) {
					t.Fatalf("error %v, want a HostnameError", err)
				}
			case *x509.UnknownAuthorityError:
				if !errors.As(err, want) {
					t.Fatalf("error %v, want an UnknownAuthorityError", err)
				}
			case *x509.CertificateInvalidError:
				if !errors.As(err, want) || want.Reason != x509.Expired {
					t.Fatalf("error %v, want an expired CertificateInvalidError", err)
				}
			}
		})
	}
}

func TestWritePEM(t *testing.T) {
	c := Make(t, Options{Hosts: []string{"127.0.0.1"}, CommonName: "pem test"})
	certFile, keyFile := c.WritePEM(t)
	kp, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.Equal(c.Leaf) || leaf.Subject.CommonName != "pem test" {
		t.Fatalf("loaded certificate %q differs from the one made", leaf.Subject.CommonName)
	}
	if err := handshake(t, &tls.Config{Certificates: []tls.Certificate{kp}}, &tls.Config{RootCAs: c.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("handshake with the loaded pair: %v", err)
	}
}
