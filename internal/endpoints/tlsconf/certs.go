package tlsconf

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// SelfSignedTLS generates, in memory, a self-signed ECDSA P-256 certificate
// valid for hosts (IP addresses become IP SANs, anything else DNS SANs;
// "127.0.0.1" and "localhost" when hosts is empty) from one hour ago for
// one year. It returns a server configuration carrying the certificate
// (TLS 1.2 minimum) and a pool holding it, for clients' RootCAs.
// It doesn't perform I/O.
func SelfSignedTLS(hosts ...string) (*tls.Config, *x509.CertPool, error) {
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1", "localhost"}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: generate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"mailbench demo target"}, CommonName: hosts[0]},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: parse certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{
			Certificate: [][]byte{der},
			PrivateKey:  key,
			Leaf:        cert,
		}},
	}
	return cfg, pool, nil
}

// PinnedClientTLS returns a client configuration that trusts exactly one
// certificate, the DER bytes cert (a tls.Certificate's Certificate[0]),
// whatever names it carries and whoever signed it: fit for a relay host
// whose certificate is known in advance, such as mailbench's own sink. It
// requires TLS 1.2 or later and doesn't perform I/O.
func PinnedClientTLS(cert []byte) *tls.Config {
	pinned := bytes.Clone(cert)
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Chain and name checks are replaced by the pin below.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, pinned) {
				return errors.New("tlsconf: the peer's certificate is not the pinned one")
			}
			return nil
		},
	}
}
