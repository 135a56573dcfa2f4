package measure_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testcert"
	"github.com/mailbench/mailbench/measure"
)

// refusedDialError dials a 127.0.0.1 port that was just closed.
func refusedDialError(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		t.Skip("a closed port accepted a connection")
	}
	return err
}

// untrustedHandshakeError runs a real handshake against a 127.0.0.1 TLS
// server whose self-signed certificate the client does not trust.
func untrustedHandshakeError(t *testing.T) error {
	t.Helper()
	server, _ := testcert.New(t, "127.0.0.1")
	err := testcert.Handshake(t, server, &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"})
	if err == nil {
		t.Fatal("handshake with an untrusted certificate succeeded")
	}
	return err
}

// closedConnError reads from a 127.0.0.1 TCP connection this side already
// closed.
func closedConnError(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = c.Read(make([]byte, 1))
	return err
}

func TestClassify(t *testing.T) {
	refused := refusedDialError(t)
	var oe *net.OpError
	if !errors.As(refused, &oe) {
		t.Fatalf("dial error %T is not a *net.OpError", refused)
	}
	untrusted := untrustedHandshakeError(t)
	var ua x509.UnknownAuthorityError
	if !errors.As(untrusted, &ua) {
		t.Fatalf("handshake error %v is not an x509.UnknownAuthorityError", untrusted)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()

	tests := []struct {
		name string
		err  error
		want measure.ErrorClass
	}{
		{"nil", nil, measure.OK},
		{"ErrTimeout", measure.ErrTimeout, measure.Timeout},
		{"ErrTimeout wrapped", fmt.Errorf("FETCH: %w", measure.ErrTimeout), measure.Timeout},
		{"os.ErrDeadlineExceeded", os.ErrDeadlineExceeded, measure.Timeout},
		{"deadline in a net.OpError", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, measure.Timeout},
		{"context deadline", deadline.Err(), measure.Timeout},
		{"connection refused", refused, measure.Connection},
		{"connection refused wrapped", fmt.Errorf("connect: %w", refused), measure.Connection},
		{"io.EOF", io.EOF, measure.Connection},
		{"io.ErrUnexpectedEOF wrapped", fmt.Errorf("reading reply: %w", io.ErrUnexpectedEOF), measure.Connection},
		{"net.ErrClosed", net.ErrClosed, measure.Connection},
		{"read on a closed connection", closedConnError(t), measure.Connection},
		{"ProtocolError", &measure.ProtocolError{Op: "SELECT", Reply: "NO no such mailbox"}, measure.Protocol},
		{"ProtocolError wrapped", fmt.Errorf("session: %w", &measure.ProtocolError{Op: "RCPT TO", Reply: "550 no"}), measure.Protocol},
		{"IntegrityError", &measure.IntegrityError{Detail: "digest mismatch"}, measure.Integrity},
		{"IntegrityError wrapped", fmt.Errorf("check: %w", &measure.IntegrityError{Detail: "duplicate"}), measure.Integrity},
		{"TLSError with a plain error", &measure.TLSError{Op: "TLS handshake", Err: errors.New("tls: server selected unsupported protocol version 301")}, measure.TLS},
		{"TLSError around a deadline", &measure.TLSError{Op: "TLS handshake", Err: os.ErrDeadlineExceeded}, measure.Timeout},
		{"TLSError around EOF", &measure.TLSError{Op: "TLS handshake", Err: io.EOF}, measure.Connection},
		{"untrusted certificate, real handshake", untrusted, measure.TLS},
		{"untrusted certificate wrapped", fmt.Errorf("connect: %w", untrusted), measure.TLS},
		{"remote alert", &net.OpError{Op: "remote error", Err: tls.AlertError(42)}, measure.TLS},
		{"record header", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, measure.TLS},
		// A cancelled operation is the caller's choice, not a failure of the
		// server: a class of its own, never counted as an error.
		{"context.Canceled", cancelled.Err(), measure.Cancelled},
		{"context.Canceled wrapped", fmt.Errorf("APPEND: %w", context.Canceled), measure.Cancelled},
		{"dial cancelled", &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("x: %w", context.Canceled)}, measure.Cancelled},
		{"plain error", errors.New("something else"), measure.Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := measure.Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestKnown(t *testing.T) {
	tests := []struct {
		f    measure.Function
		want bool
	}{
		{measure.SMTPConnect, true},
		{measure.IMAPUIDFetch, true},
		{measure.DeliveryLocal, true},
		{measure.DeliveryRemote, true},
		{"", false},
		{"IMAP NOOP", false},
		{"imap append", false}, // names are exact
		{measure.IMAPAppend + " ", false},
	}
	for _, tt := range tests {
		if got := measure.Known(tt.f); got != tt.want {
			t.Errorf("Known(%q) = %v, want %v", tt.f, got, tt.want)
		}
	}
	// Every listed function is known, and the lists agree in length.
	for _, f := range measure.AllFunctions {
		if !measure.Known(f) {
			t.Errorf("Known(%q) = false for a listed function", f)
		}
	}
	if len(measure.SPECFunctions) != 14 || len(measure.AllFunctions) != len(measure.SPECFunctions)+2+len(measure.ClientFunctions) {
		t.Errorf("%d SPEC functions, %d in all; want 14 and 18", len(measure.SPECFunctions), len(measure.AllFunctions))
	}
}
