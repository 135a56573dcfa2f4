package measure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// ErrTimeout is returned (wrapped) by clients when their own watchdog or
// deadline cut an operation short.
var ErrTimeout = errors.New("operation timed out")

// ProtocolError is a reply that the server sent but that the client did not
// accept: IMAP NO/BAD, SMTP 4xx/5xx, or a reply of unexpected shape.
type ProtocolError struct {
	Op    string // e.g. "SELECT", "RCPT TO"
	Reply string // the server's words, truncated; never a password
}

func (e *ProtocolError) Error() string { return e.Op + ": " + Printable(e.Reply) }

// AuthError is the server's refusal of a login: an IMAP LOGIN or
// AUTHENTICATE answered NO or BAD, an SMTP AUTH answered with an error
// reply. Classify maps it to Auth, apart from other protocol errors, so that
// wrong passwords are never mistaken for a misbehaving server.
type AuthError struct {
	Op    string // "LOGIN", "AUTHENTICATE", "AUTH"
	Reply string // the server's words, truncated; never a password
}

func (e *AuthError) Error() string { return e.Op + " refused: " + Printable(e.Reply) }

// AsAuth turns the server's refusal of a login step (a protocol error whose
// reply is an IMAP NO or BAD, or an SMTP 4xx or 5xx) into an AuthError; the
// chain's other errors are dropped, the reply is what matters. Any other
// error, a malformed reply included, is returned as it is; so is a refusal
// whose RFC 5530 code says the server could not check the credentials
// (UNAVAILABLE, INUSE, SERVERBUG: the server's trouble, a protocol error,
// not a wrong password). A NO without a code cannot be told from a wrong
// password and stays an auth error.
func AsAuth(err error) error {
	var pe *ProtocolError
	if errors.As(err, &pe) && isRefusal(pe.Reply) && !serverTrouble(pe.Reply) {
		return &AuthError{Op: pe.Op, Reply: pe.Reply}
	}
	return err
}

// serverTrouble reports whether an IMAP refusal carries a response code of
// the server's own trouble (RFC 5530).
func serverTrouble(reply string) bool {
	u := strings.ToUpper(reply)
	for _, code := range []string{"[UNAVAILABLE", "[INUSE", "[SERVERBUG"} {
		if strings.Contains(u, code) {
			return true
		}
	}
	return false
}

// isRefusal reports whether reply is a server's refusal: "NO ...", "BAD
// ..." (IMAP) or a 4xx or 5xx reply code (SMTP).
func isRefusal(reply string) bool {
	if strings.HasPrefix(reply, "NO") || strings.HasPrefix(reply, "BAD") {
		return true
	}
	return len(reply) >= 3 && (reply[0] == '4' || reply[0] == '5') &&
		reply[1] >= '0' && reply[1] <= '9' && reply[2] >= '0' && reply[2] <= '9'
}

// TLSError is a failed TLS handshake. Clients wrap handshake failures in
// it so that Classify maps them to TLS even when crypto/tls reports them as
// plain errors ("tls: server selected unsupported protocol version"). A
// handshake cut short by a deadline is still a Timeout, and one cut short by
// the peer closing the connection (EOF, reset) a Connection error.
type TLSError struct {
	Op  string // e.g. "TLS handshake"; may be empty
	Err error
}

func (e *TLSError) Error() string {
	if e.Op == "" {
		return e.Err.Error()
	}
	return e.Op + ": " + e.Err.Error()
}

func (e *TLSError) Unwrap() error { return e.Err }

// IntegrityError is a message that arrived corrupted or more than once.
type IntegrityError struct{ Detail string }

func (e *IntegrityError) Error() string { return "integrity: " + e.Detail }

// Classify maps an error to its ErrorClass. Protocol clients wrap server
// replies in *ProtocolError so that Classify need not know their types.
func Classify(err error) ErrorClass {
	if err == nil {
		return OK
	}
	var pe *ProtocolError
	var ie *IntegrityError
	var ae *AuthError
	switch {
	case errors.As(err, &ie):
		return Integrity
	case errors.As(err, &ae):
		return Auth
	case errors.As(err, &pe):
		return Protocol
	case errors.Is(err, context.Canceled):
		// Only mailbench cancels its contexts (ramp-down end, Ctrl-C).
		return Cancelled
	case errors.Is(err, ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded):
		return Timeout
	}
	if isTLSError(err) {
		return TLS
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Timeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) || isConnectionLoss(err) {
		return Connection
	}
	var te *TLSError
	if errors.As(err, &te) {
		return TLS
	}
	return Other
}

func isConnectionLoss(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// isRemoteTLSAlert reports whether err carries a TLS alert that the peer
// sent: crypto/tls reports it as a *net.OpError with Op "remote error".
func isRemoteTLSAlert(err error) bool {
	for err != nil {
		var oe *net.OpError
		if !errors.As(err, &oe) {
			return false
		}
		if oe.Op == "remote error" {
			return true
		}
		err = oe.Err
	}
	return false
}

func isTLSError(err error) bool {
	var (
		rec   tls.RecordHeaderError
		alert tls.AlertError
		cv    *tls.CertificateVerificationError
		ua    x509.UnknownAuthorityError
		hn    x509.HostnameError
		ci    x509.CertificateInvalidError
	)
	return errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || isRemoteTLSAlert(err)
}
