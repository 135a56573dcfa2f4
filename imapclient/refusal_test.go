package imapclient

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mailbench/mailbench/measure"
)

func TestTemporaryRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&measure.ProtocolError{Op: "APPEND", Reply: "NO System I/O error"}, true},
		{fmt.Errorf("imapclient: %w", &measure.ProtocolError{Op: "APPEND", Reply: "NO [UNAVAILABLE] try later"}), true},
		{&measure.ProtocolError{Op: "APPEND", Reply: "NO [SERVERBUG] oops"}, true},
		{&measure.ProtocolError{Op: "APPEND", Reply: "NO [inuse] busy"}, true},
		{&measure.ProtocolError{Op: "APPEND", Reply: "NO [OVERQUOTA] Over quota"}, false},
		{&measure.ProtocolError{Op: "APPEND", Reply: "NO [TRYCREATE] no mailbox"}, false},
		{&measure.ProtocolError{Op: "APPEND", Reply: "NO [BADCHARSET (UTF-8)] charset"}, false},
		{&measure.ProtocolError{Op: "APPEND", Reply: "BAD syntax"}, false},
		{&measure.AuthError{Op: "LOGIN", Reply: "NO database is locked"}, true},
		{fmt.Errorf("user u: %w", &measure.AuthError{Op: "LOGIN", Reply: "NO [UNAVAILABLE] busy"}), true},
		{&measure.AuthError{Op: "LOGIN", Reply: "NO [AUTHENTICATIONFAILED] Authentication failed."}, false},
		{&measure.AuthError{Op: "LOGIN", Reply: "BAD no"}, false},
		{errors.New("connection lost"), false},
		{nil, false},
	} {
		if got := TemporaryRefusal(tc.err); got != tc.want {
			t.Errorf("TemporaryRefusal(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
