package measure

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"NO [UNAVAILABLE] try later", "NO [UNAVAILABLE] try later"},
		{"line one\nline\ttwo", "line one\nline\ttwo"},
		{"NO \x1b]2;pwned\x07 \x1b[2J", `NO \x1b]2;pwned\a \x1b[2J`},
		{"carriage\rreturn", `carriage\rreturn`},
		{"C1 \u009b31m", `C1 \u009b31m`},
		{"bad \xff utf-8, ünïcödé kept", `bad \xff utf-8, ünïcödé kept`},
		{"del \x7f", `del \x7f`},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestAsAuthKeepsServerTrouble: a LOGIN refused because the server could
// not check the credentials (RFC 5530's UNAVAILABLE, INUSE, SERVERBUG) is
// the server's protocol error, not auth; a wrong password's NO, with or
// without a code, is auth.
func TestAsAuthKeepsServerTrouble(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  ErrorClass
	}{
		{"NO [AUTHENTICATIONFAILED] Authentication failed.", Auth},
		{"NO Login failed: authentication failure", Auth},
		{"NO [UNAVAILABLE] Temporary authentication failure", Protocol},
		{"NO [inuse] mailbox busy", Protocol},
		{"NO [SERVERBUG] internal error", Protocol},
		{"535 5.7.8 Authentication credentials invalid", Auth},
	} {
		err := AsAuth(&ProtocolError{Op: "LOGIN", Reply: tc.reply})
		if got := Classify(err); got != tc.want {
			t.Errorf("%q: class %v, want %v", tc.reply, got, tc.want)
		}
	}
}
