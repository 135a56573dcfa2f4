package tomlstrict

import "fmt"

// Bounds of a config document's shape, checked before it is decoded: the
// TOML decoder takes time quadratic in the nesting of inline tables and in
// the parts of a dotted key, so that a 1 MiB file of either would take
// hours. A real config nests 3 levels and its longest key has 4 parts.
const (
	maxNesting  = 32 // open [ and { at once
	maxKeyParts = 32 // parts of one dotted key
)

// CheckShape returns the 1-based line and a description of the first place
// where src nests deeper than maxNesting or chains more than maxKeyParts
// dotted parts, or 0 and "". It lexes strings and comments only, so that
// brackets and dots inside them don't count; it never fails on input it
// does not understand.
func CheckShape(src string) (line int, msg string) {
	line = 1
	depth, chain := 0, 0
	afterDot := false
	// word ends a bare word or a string: it extends the dotted chain when
	// a dot came before it.
	word := func() {
		if afterDot {
			chain++
		} else {
			chain = 1
		}
		afterDot = false
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			chain, afterDot = 0, false
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			var nl int
			i, nl = skipString(src, i)
			line += nl
			word()
		case c == '.':
			i++
			afterDot = chain > 0
		case isBareKeyByte(c):
			for i < len(src) && isBareKeyByte(src[i]) {
				i++
			}
			word()
		default:
			i++
			chain, afterDot = 0, false
			switch c {
			case '[', '{':
				depth++
			case ']', '}':
				depth = max(depth-1, 0)
			}
		}
		if depth > maxNesting {
			return line, fmt.Sprintf("nested more than %d levels deep", maxNesting)
		}
		if chain > maxKeyParts {
			return line, fmt.Sprintf("a dotted key of more than %d parts", maxKeyParts)
		}
	}
	return 0, ""
}

// skipString skips the string starting at src[i] (a quote), returning the
// index after it and the newlines it spans. A single-line string ends at
// its closing quote or, unterminated, before the end of its line.
func skipString(src string, i int) (next, newlines int) {
	q := src[i]
	if i+2 < len(src) && src[i+1] == q && src[i+2] == q {
		// Multi-line: up to """ (or '''), plus at most two more quotes
		// that belong to the content.
		j := i + 3
		for j < len(src) {
			switch {
			case src[j] == '\\' && q == '"':
				if j+1 < len(src) && src[j+1] == '\n' {
					newlines++
				}
				j += 2
				continue
			case src[j] == '\n':
				newlines++
			case src[j] == q && j+2 < len(src) && src[j+1] == q && src[j+2] == q:
				j += 3
				for k := 0; k < 2 && j < len(src) && src[j] == q; k++ {
					j++
				}
				return j, newlines
			}
			j++
		}
		return len(src), newlines
	}
	j := i + 1
	for j < len(src) && src[j] != '\n' {
		switch {
		case src[j] == '\\' && q == '"':
			j++
			if j < len(src) && src[j] == '\n' {
				return j, 0
			}
		case src[j] == q:
			return j + 1, 0
		}
		j++
	}
	return j, 0
}
