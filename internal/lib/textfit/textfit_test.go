package textfit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		width    int
		want     string
	}{
		{"fits", "Sessions:  started 4", 20, "Sessions:  started 4"},
		{"key value", "Users:     20 mailboxes at 720 sessions per user-hour", 30,
			"Users:     20 mailboxes at 720\n           sessions per\n           user-hour"},
		{"aligned pair", "  Missing          0 (looked for, not found by the end of settle)", 40,
			"  Missing          0 (looked for, not\n                   found by the end of\n                   settle)"},
		{"item", "  - IMAP EXPUNGE: 95.00% is not >95%", 24, "  - IMAP EXPUNGE: 95.00%\n    is not >95%"},
		{"prose", "Delivery Time (local) timing is by date", 20, "Delivery Time\n  (local) timing is\n  by date"},
		{"long word", "Key: " + strings.Repeat("x", 30), 20, "Key: xxxxxxxxxxxxxxx\n     xxxxxxxxxxxxxxx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Line(tt.in, tt.width)
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			for _, l := range strings.Split(got, "\n") {
				if utf8.RuneCountInString(l) > tt.width {
					t.Errorf("line of %d runes: %q", utf8.RuneCountInString(l), l)
				}
			}
			if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(tt.in), " ") && tt.name != "long word" {
				t.Errorf("words changed: %q", got)
			}
		})
	}
}

// TestWriterPartial: a line written in parts is wrapped whole; Flush
// writes a last line without its newline.
func TestWriterPartial(t *testing.T) {
	var b strings.Builder
	f := NewWriter(&b, 60)
	f.Write([]byte("Key:  " + strings.Repeat("word ", 10)))
	f.Write([]byte(strings.Repeat("more ", 5) + "\nlast"))
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "Key:  word word word word word word word word word word more\n      more more more more\nlast"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}
