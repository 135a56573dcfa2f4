package measure

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
)

// Reasons that TLSReason reports.
const (
	ReasonUntrusted  = "untrusted certificate"
	ReasonServerName = "wrong server name"
	ReasonExpired    = "expired or not yet valid certificate"
	ReasonBadCert    = "bad certificate"
	ReasonVersion    = "protocol version mismatch"
	ReasonNotTLS     = "peer does not speak TLS"
	ReasonRejected   = "handshake rejected by the peer"
	ReasonHandshake  = "handshake failure"
)

// TLSReason names the cause of a failed TLS handshake in a few words (one of
// the Reason constants, ReasonRejected followed by the peer's alert), or ""
// when err is not a TLS failure. It doesn't perform I/O.
func TLSReason(err error) string {
	if err == nil {
		return ""
	}
	var (
		hn  x509.HostnameError
		ua  x509.UnknownAuthorityError
		ci  x509.CertificateInvalidError
		cv  *tls.CertificateVerificationError
		rec tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &hn):
		return ReasonServerName
	case errors.As(err, &ua):
		return ReasonUntrusted
	case errors.As(err, &ci):
		if ci.Reason == x509.Expired {
			return ReasonExpired
		}
		return ReasonBadCert
	case errors.As(err, &cv):
		return ReasonBadCert
	case errors.As(err, &rec):
		return ReasonNotTLS
	}
	// The typed errors are gone when a client redacted the text (a
	// password that happens to occur in a certificate name): fall back on
	// crypto/x509's and crypto/tls's wording.
	msg := err.Error()
	for _, m := range []struct{ text, reason string }{
		{"certificate is valid for", ReasonServerName},
		{"certificate is not valid for any names", ReasonServerName},
		{"certificate signed by unknown authority", ReasonUntrusted},
		{"certificate has expired or is not yet valid", ReasonExpired},
		{"unsupported protocol version", ReasonVersion},
		{"no supported versions", ReasonVersion},
		{"protocol version not supported", ReasonVersion},
	} {
		if strings.Contains(msg, m.text) {
			return m.reason
		}
	}
	if alert, ok := remoteAlert(err); ok {
		if strings.Contains(alert, "protocol version") {
			return ReasonVersion
		}
		return ReasonRejected + ": " + alert
	}
	var ae tls.AlertError // an alert of ours, not the peer's
	if errors.As(err, &ae) || strings.Contains(msg, "tls: ") {
		return ReasonHandshake
	}
	return ""
}

// remoteAlert returns the text of a TLS alert the peer sent.
func remoteAlert(err error) (string, bool) {
	for err != nil {
		var oe *net.OpError
		if !errors.As(err, &oe) {
			return "", false
		}
		if oe.Op == "remote error" && oe.Err != nil {
			return strings.TrimPrefix(oe.Err.Error(), "tls: "), true
		}
		err = oe.Err
	}
	return "", false
}
