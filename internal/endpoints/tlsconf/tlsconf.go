// Package tlsconf turns the TLS settings of a workload file into
// *tls.Config values: Client for an endpoint of the server under test,
// Server for the sink, EmbeddedTLS for the embedded target. measure.TLSReason names
// the cause of a failed handshake for the report.
//
// Nothing here performs network I/O; Client and Server read the files they
// are given.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/mailbench/mailbench/workload"
)

// SessionCacheSize is the capacity of the client session cache that Client
// creates when session resumption is on. The cache is keyed by server name,
// so one endpoint needs one entry; the room is for safety.
const SessionCacheSize = 64

// Client returns the client TLS configuration of ep, or nil when ep.TLS is
// "none" or empty. The configuration:
//   - verifies the server certificate unless ep.InsecureSkipVerify, against
//     ep.CAFile when set (PEM, one or more certificates), else the system roots;
//   - expects the name ep.ServerName, by default the host of ep.Address;
//   - requires TLS 1.2 or, with min_tls_version = "1.3", TLS 1.3;
//   - with ep.SessionResumption, carries a ClientSessionCache of its own.
//
// Every simulated user of the endpoint must share the returned value (the
// protocol clients clone it per connection, and a clone keeps the cache):
// that makes the cache one per endpoint, shared by all users, as the
// workload file promises. Call Client once per endpoint, not per user.
func Client(ep workload.Endpoint) (*tls.Config, error) {
	if ep.TLS == "" || ep.TLS == "none" {
		return nil, nil
	}
	tc := &tls.Config{ServerName: ep.ServerName, InsecureSkipVerify: ep.InsecureSkipVerify}
	if tc.ServerName == "" {
		host, _, err := net.SplitHostPort(ep.Address)
		if err != nil {
			host = ep.Address
		}
		tc.ServerName = host
	}
	v, err := MinVersion(ep.MinTLSVersion)
	if err != nil {
		return nil, err
	}
	tc.MinVersion = v
	if ep.CAFile != "" {
		pool, err := LoadCAFile(ep.CAFile)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if ep.SessionResumption {
		tc.ClientSessionCache = tls.NewLRUClientSessionCache(SessionCacheSize)
	}
	return tc, nil
}

// EmbeddedClient is Client for an endpoint of the embedded target: it
// trusts roots (from EmbeddedTLS) instead of ep.CAFile and expects the
// name "127.0.0.1" unless ep.ServerName says otherwise. It returns nil when
// ep.TLS is "none" or empty.
func EmbeddedClient(ep workload.Endpoint, roots *x509.CertPool) (*tls.Config, error) {
	ep.CAFile = ""
	if ep.ServerName == "" {
		ep.ServerName = "127.0.0.1"
	}
	tc, err := Client(ep)
	if tc != nil {
		tc.RootCAs = roots
	}
	return tc, err
}

// MinVersion maps min_tls_version ("", "1.2", "1.3") to a tls version
// constant; "" means TLS 1.2.
func MinVersion(s string) (uint16, error) {
	switch s {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("tlsconf: min_tls_version %q: want \"1.2\" or \"1.3\"", s)
}

// LoadCAFile reads PEM certificates from path into a new pool. A file
// without any certificate is an error.
func LoadCAFile(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tlsconf: ca_file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// Server returns a server TLS configuration (TLS 1.2 minimum) with the
// certificate and key of the given PEM files, or, when both are empty, a
// self-signed certificate generated in memory for 127.0.0.1 and localhost.
// Giving only one of the two files is an error.
func Server(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		srv, _, err := SelfSignedTLS()
		return srv, err
	case certFile == "" || keyFile == "":
		return nil, errors.New("tlsconf: a certificate needs both cert_file and key_file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// EmbeddedTLS returns what the embedded target needs for STARTTLS: a server
// configuration with a freshly generated self-signed certificate for
// 127.0.0.1 and localhost, and the pool that trusts it, for the clients'
// RootCAs (see EmbeddedClient). It doesn't perform I/O.
func EmbeddedTLS() (server *tls.Config, clientRoots *x509.CertPool, err error) {
	return SelfSignedTLS("127.0.0.1", "localhost")
}
