// Package testcert makes self-signed TLS certificates for tests that run
// servers on 127.0.0.1. It is for tests only: keys are fresh P-256 keys,
// never stored anywhere but where WritePEM puts them.
//
// Every function fails the test (t.Fatal) on error instead of returning it.
// Apart from WritePEM and Handshake, nothing here performs I/O.
package testcert

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// DefaultHosts are the names a certificate is made for when none are given.
var DefaultHosts = []string{"127.0.0.1", "localhost"}

// Options says what certificate Make makes. The zero Options is a
// certificate valid from an hour ago to an hour from now for DefaultHosts.
type Options struct {
	Hosts      []string  // IP addresses or DNS names; nil means DefaultHosts
	NotBefore  time.Time // zero means an hour ago
	NotAfter   time.Time // zero means an hour from now
	CommonName string    // zero means "mailbench test"
}

// Cert is a self-signed certificate and its private key.
type Cert struct {
	Leaf *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Make returns a fresh self-signed certificate per o.
func Make(t testing.TB, o Options) *Cert {
	t.Helper()
	now := time.Now()
	if o.Hosts == nil {
		o.Hosts = DefaultHosts
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = now.Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = now.Add(time.Hour)
	}
	if o.CommonName == "" {
		o.CommonName = "mailbench test"
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: o.CommonName},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// A CA so that a PEM file of it also serves as a ca_file.
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Cert{Leaf: leaf, Key: key}
}

// New returns a server configuration holding a fresh certificate, valid
// now, for hosts (DefaultHosts when none are given), and a pool that
// trusts it, for a client's RootCAs.
func New(t testing.TB, hosts ...string) (*tls.Config, *x509.CertPool) {
	t.Helper()
	c := Make(t, Options{Hosts: hostsOrNil(hosts)})
	return c.ServerConfig(), c.Pool()
}

// Expired returns a certificate for hosts (DefaultHosts when none are
// given) that expired a day ago.
func Expired(t testing.TB, hosts ...string) *Cert {
	t.Helper()
	now := time.Now()
	return Make(t, Options{Hosts: hostsOrNil(hosts), NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)})
}

func hostsOrNil(hosts []string) []string {
	if len(hosts) == 0 {
		return nil
	}
	return hosts
}

// ServerConfig returns a new server configuration presenting c.
func (c *Cert) ServerConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{c.Leaf.Raw}, PrivateKey: c.Key, Leaf: c.Leaf}}}
}

// Pool returns a new pool that trusts c.
func (c *Cert) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Leaf)
	return p
}

// WritePEM writes c to cert.pem and key.pem in a fresh temporary directory
// of the test and returns their paths.
func (c *Cert) WritePEM(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	kder, err := x509.MarshalECPrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Leaf.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Handshake runs one TLS handshake between server and client over a fresh
// 127.0.0.1 TCP connection and returns the client's error. A net.Pipe would
// not do: it has no buffer for the alert a failing client sends. Everything
// is bounded by a 5 s deadline, and the listener is closed on return.
func Handshake(t testing.TB, server, client *tls.Config) error {
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
