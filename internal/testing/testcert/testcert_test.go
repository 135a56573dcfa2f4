package testcert

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
)

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
			err := Handshake(t, tt.server, &tls.Config{RootCAs: tt.roots, ServerName: tt.serverName})
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
	if err := Handshake(t, &tls.Config{Certificates: []tls.Certificate{kp}}, &tls.Config{RootCAs: c.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("handshake with the loaded pair: %v", err)
	}
}
