package measure

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every control character (C0 but tab and line
// feed, DEL, C1) and every byte of invalid UTF-8 written as a Go escape
// (\x1b, \u009b), so that text from a peer or a file (a server's reply, a
// report read back) cannot move a terminal's cursor, retitle its window or
// hide what follows. It returns s itself when there is nothing to escape.
// It doesn't perform I/O.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (r != '\t' && r != '\n' && unicode.IsControl(r)) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case r != '\t' && r != '\n' && unicode.IsControl(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
