// Package textfit wraps text to a terminal's width: prose lines at spaces
// with a hanging indent, table rows left whole. It is shared by the text
// reports and the status display's log lines. It doesn't know what the
// text says.
package textfit

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MinWidth is the narrowest width text is laid out in; a narrower
// terminal wraps it.
const MinWidth = 60

// Writer wraps every line written through it that is wider than its
// width, at spaces, with a hanging indent: under the value of a "key:
// value" line (or of a key and value set apart by a run of spaces), under
// the text of a "- " item, else two columns in. Lines that fit pass
// unchanged. Call Flush at the end for a last line without its newline.
// A line with three or more column gaps is a table's row and passes as it
// is: a renderer lays its tables out for the width.
type Writer struct {
	w       io.Writer
	width   int
	partial []byte
}

// NewWriter returns a Writer of w for width columns (at least MinWidth).
func NewWriter(w io.Writer, width int) *Writer {
	return &Writer{w: w, width: max(width, MinWidth)}
}

// Write wraps p's complete lines and keeps the rest for the next Write.
func (f *Writer) Write(p []byte) (int, error) {
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			break
		}
		if _, err := io.WriteString(f.w, Line(string(f.partial[:i]), f.width)+"\n"); err != nil {
			return 0, err
		}
		f.partial = f.partial[i+1:]
	}
	if len(f.partial) == 0 {
		f.partial = nil
	}
	return len(p), nil
}

// Flush writes a last line that has no newline.
func (f *Writer) Flush() error {
	if len(f.partial) == 0 {
		return nil
	}
	_, err := io.WriteString(f.w, Line(string(f.partial), f.width))
	f.partial = nil
	return err
}

// keyColon and keyGap find where the value of a key-value line starts:
// after "key:" and its padding, or after the first run of two or more
// spaces that follows some text.
var (
	keyColon = regexp.MustCompile(`^\s*[^\s:][^:]{0,40}:\s+`)
	keyGap   = regexp.MustCompile(`^\s*\S+(?: \S+)*\s{2,}`)
)

// maxHangingIndent is the deepest a continuation line is indented under
// its value; a longer key is prose, continued two columns in.
const maxHangingIndent = 28

// columnGap is a gap between two columns of a table: a run of two or
// more spaces between text.
var columnGap = regexp.MustCompile(`\S {2,}\S`)

// Line returns line wrapped to width columns (the lines joined by
// "\n"), as Writer does: broken at the last space that fits, the text of
// each piece as it was, continuation lines indented under the value of a
// key-value line, under the text of a "- " item, else two columns in. It
// doesn't perform I/O.
func Line(line string, width int) string {
	if utf8.RuneCountInString(line) <= width || len(columnGap.FindAllStringIndex(line, 3)) >= 3 {
		return line // it fits, or it is a table's row: re-flowed it would be worse than wide
	}
	lead := len(line) - len(strings.TrimLeft(line, " "))
	indent := lead + 2
	if rest := line[lead:]; strings.HasPrefix(rest, "- ") || strings.HasPrefix(rest, "* ") {
		indent = lead + 2
	} else {
		for _, re := range []*regexp.Regexp{keyColon, keyGap} {
			if m := re.FindString(line); m != "" && utf8.RuneCountInString(m) <= maxHangingIndent {
				indent = utf8.RuneCountInString(m)
				break
			}
		}
	}
	pad := strings.Repeat(" ", indent)
	var out []string
	cur, min := []rune(line), indent // a break before the value would leave an empty head
	for len(cur) > width {
		cut := -1
		for k := width; k > min; k-- {
			if cur[k] == ' ' {
				cut = k
				break
			}
		}
		if cut < 0 {
			cut = width // no space to break at: the word is cut
		}
		out = append(out, strings.TrimRight(string(cur[:cut]), " "))
		rest := strings.TrimLeft(string(cur[cut:]), " ")
		if rest == "" {
			return strings.Join(out, "\n")
		}
		cur, min = []rune(pad+rest), indent
	}
	return strings.Join(append(out, strings.TrimRight(string(cur), " ")), "\n")
}
