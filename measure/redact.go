package measure

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
)

// Secrets lists what must never appear in an error of a session that logs
// in as login with password: the password and the SASL PLAIN encodings that
// carry it, longest first; none without a password. It doesn't perform I/O.
func Secrets(login, password string) []string {
	if password == "" {
		return nil
	}
	return []string{
		base64.StdEncoding.EncodeToString([]byte("\x00" + login + "\x00" + password)),
		base64.StdEncoding.EncodeToString([]byte(password)),
		password,
	}
}

// RedactedMask is what both clients put where a server echoed a secret.
const RedactedMask = "[redacted]"

// Scrub replaces every occurrence of each secret in s with mask.
func Scrub(s, mask string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, mask)
		}
	}
	return s
}

// Redact returns err unchanged unless the text of err or of an error in its
// chain (through Unwrap() error and Unwrap() []error) contains one of
// secrets. Then it returns a *RedactedError in its place, with every
// occurrence replaced by mask and the class that Classify gives err, but
// none of err's links: no secret is reachable from the result, by Error()
// or by unwrapping. The clients pass every error through it.
func Redact(err error, mask string, secrets ...string) error {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return s == "" })
	if err == nil || !chainMentions(err, secrets) {
		return err
	}
	scrub := func(s string) string { return Scrub(s, mask, secrets) }
	r := &RedactedError{text: scrub(err.Error())}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		r.links = append(r.links, &ProtocolError{Op: scrub(pe.Op), Reply: scrub(pe.Reply)})
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		r.links = append(r.links, &AuthError{Op: scrub(ae.Op), Reply: scrub(ae.Reply)})
	}
	switch Classify(err) {
	case Timeout:
		r.links = append(r.links, ErrTimeout)
	case Connection:
		r.links = append(r.links, net.ErrClosed)
	case TLS:
		r.links = append(r.links, tls.AlertError(40)) // handshake_failure
	case Integrity:
		r.links = append(r.links, &IntegrityError{Detail: "redacted"})
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		r.links = append(r.links, errno)
	}
	for _, sentinel := range []error{context.Canceled, context.DeadlineExceeded, io.EOF, io.ErrUnexpectedEOF} {
		if errors.Is(err, sentinel) {
			r.links = append(r.links, sentinel)
		}
	}
	return r
}

// RedactedError stands in for an error whose chain mentioned a secret (see
// Redact). It prints the redacted text and unwraps to a redacted copy of
// the original's *ProtocolError and *AuthError, if any, and to sentinels that classify as
// the original did (ErrTimeout, net.ErrClosed, a TLS alert,
// context.Canceled, the syscall.Errno found in the chain). The original
// error is not kept.
type RedactedError struct {
	text  string
	links []error
}

func (e *RedactedError) Error() string   { return e.text }
func (e *RedactedError) Unwrap() []error { return e.links }

// chainMentions reports whether the text of err or of any error it wraps
// contains one of secrets.
func chainMentions(err error, secrets []string) bool {
	if err == nil || len(secrets) == 0 {
		return false
	}
	text := err.Error()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			return true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return chainMentions(u.Unwrap(), secrets)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if chainMentions(e, secrets) {
				return true
			}
		}
	}
	return false
}
