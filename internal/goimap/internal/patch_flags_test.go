package internal

// Differential test for mailbench's flags.patch: ExpectFlag,
// canonicalFlag and canonicalMailboxAttr give what beta.8's code gives
// (strings.ToLower of the whole name, "\\"+name for a system flag), and a
// known flag costs no allocation.

import (
	"bufio"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

// beta8Flag is beta.8's canonicalFlag and ExpectFlag's name handling.
func beta8Flag(system bool, name string) imap.Flag {
	if system {
		name = "\\" + name
	}
	canonOnce.Do(canonInit)
	if flag, ok := canonFlag[strings.ToLower(name)]; ok {
		return flag
	}
	return imap.Flag(name)
}

func beta8MailboxAttr(s string) imap.MailboxAttr {
	canonOnce.Do(canonInit)
	if attr, ok := canonMailboxAttr[strings.ToLower(s)]; ok {
		return attr
	}
	return imap.MailboxAttr(s)
}

var flagCases = []string{
	"Seen", "SEEN", "seen", "sEeN", "Answered", "Flagged", "Deleted", "Draft", "Recent",
	"$Forwarded", "$forwarded", "$MDNSent", "$Junk", "$NotJunk", "$Phishing", "$Important",
	"$Label1", "Custom", "HasNoChildren", "HASCHILDREN", "Noselect", "NonExistent", "Subscribed",
	"Sent", "Drafts", "Trash", "Junk", "Archive", "All", "Important", "Marked", "Unmarked",
	"Seen\u0130", "S\u0130EN", "\u212Aelvin", strings.Repeat("X", 63), strings.Repeat("Y", 64), strings.Repeat("Z", 70),
	"", "A",
}

func TestPatchFlagsMatchBeta8(t *testing.T) {
	for _, name := range flagCases {
		for _, system := range []bool{false, true} {
			want := beta8Flag(system, name)
			wire := name
			if system {
				wire = `\` + name
			}
			if name != "" && !strings.ContainsAny(name, "\u0130\u212A") { // atoms: ASCII only on the wire
				dec := imapwire.NewDecoder(bufio.NewReader(strings.NewReader(wire+" ")), imapwire.ConnSideClient)
				got, err := ExpectFlag(dec)
				if err != nil || got != want {
					t.Errorf("ExpectFlag(%q) = %q, %v; beta.8 %q", wire, got, err, want)
				}
			}
			full := name
			if system {
				full = `\` + name
			}
			if got := canonicalFlag(full); got != beta8Flag(false, full) {
				t.Errorf("canonicalFlag(%q) = %q; beta.8 %q", full, got, beta8Flag(false, full))
			}
			if got, want := canonicalMailboxAttr(full), beta8MailboxAttr(full); got != want {
				t.Errorf("canonicalMailboxAttr(%q) = %q; beta.8 %q", full, got, want)
			}
		}
	}
}

func TestPatchFlagsNoAllocation(t *testing.T) {
	r := strings.NewReader("")
	br := bufio.NewReader(r)
	dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(`\Seen \Deleted $Forwarded X`) // SP wants something after it
		br.Reset(r)
		for range 3 {
			if _, err := ExpectFlag(dec); err != nil || !dec.SP() {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations to read three known flags", allocs)
	}
}

func FuzzPatchFlags(f *testing.F) {
	for _, c := range flagCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := canonicalFlag(s), beta8Flag(false, s); got != want {
			t.Errorf("canonicalFlag(%q) = %q; beta.8 %q", s, got, want)
		}
		if got, want := canonicalMailboxAttr(s), beta8MailboxAttr(s); got != want {
			t.Errorf("canonicalMailboxAttr(%q) = %q; beta.8 %q", s, got, want)
		}
		if got, ok := lookupFolded(canonFlags(), '\\', s); ok && got != beta8Flag(true, s) {
			t.Errorf(`lookupFolded(\%q) = %q; beta.8 %q`, s, got, beta8Flag(true, s))
		}
	})
}
