package internal

// Test of mailbench's caps.patch: canonicalCap must return what beta.8's
// did for every name.

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
)

func origCanonicalCap(s string) imap.Cap {
	for _, cap := range []imap.Cap{imap.CapIMAP4rev1, imap.CapIMAP4rev2} {
		if strings.EqualFold(s, string(cap)) {
			return cap
		}
	}
	return imap.Cap(strings.ToUpper(s))
}

var capCases = []string{
	"", "IMAP4REV1", "IMAP4rev1", "imap4rev1", "IMAP4REV2", "IMAP4rev2", "IDLE", "idle", "AUTH=PLAIN",
	"auth=plain", "SORT=DISPLAY", "LITERAL+", "X-GM-EXT-1", "ÄBC", "\xc3\xa4bc", "\xff", "IMAP4REV1X", "I",
	"CONTEXT=SEARCH", "I18NLEVEL=1", "STATUS=SIZE", "imap4REV1", "ſ", "K", // U+017F and U+212A fold to S and K
}

func TestPatchCanonicalCapSame(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := canonicalCap(s), origCanonicalCap(s); got != want {
			t.Fatalf("canonicalCap(%q) = %q, original %q", s, got, want)
		}
	}
	for _, s := range capCases {
		check(s)
	}
	rng := rand.New(rand.NewSource(4))
	const alphabet = "IMAPrev1234=+-_aZ\x80\xc3\xa4"
	for i := 0; i < 50000; i++ {
		b := make([]byte, rng.Intn(12))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		check(string(b))
	}
}

func FuzzPatchCanonicalCap(f *testing.F) {
	for _, s := range capCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := canonicalCap(s), origCanonicalCap(s); got != want {
			t.Fatalf("canonicalCap(%q) = %q, original %q", s, got, want)
		}
	})
}
