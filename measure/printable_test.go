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
