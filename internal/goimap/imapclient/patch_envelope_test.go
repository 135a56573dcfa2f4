package imapclient

// Equivalence tests for mailbench's envelope.patch: parseMsgID,
// parseMsgIDList and parseEnvelopeDate must return what beta.8's code
// returned for every input. The originals are kept here verbatim.

import (
	"math/rand"
	netmail "net/mail"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
)

func origParseMsgID(s string) (string, error) {
	var h mail.Header
	h.Set("Message-Id", s)
	return h.MessageID()
}

func origParseMsgIDList(s string) ([]string, error) {
	var h mail.Header
	h.Set("In-Reply-To", s)
	return h.MsgIDList("In-Reply-To")
}

var msgIDCases = []string{
	"", "<a@b>", "<abc.def@example.test>", "<a.b.c@d.e.f>", "<1234567890.ABC_def-gh+ij=k@mail.example.test>",
	"<@b>", "<a@>", "<a@b@c>", "<a b@c>", "< a@b>", "<a@b >", " <a@b>", "<a@b> ", "<a@b>(comment)",
	"(c) <a@b>", "<a@[127.0.0.1]>", "<a(b)@c>", "<a\\b@c>", "<a,b@c>", "<a;b@c>", "<a:b@c>", "<a\"b@c>",
	"<a<b@c>", "<a>b@c>", "<ä@b>", "<a@ü>", "<a@b><c@d>", "<a@b> <c@d>", "a@b", "<a@b", "a@b>", "<>",
	"<a@b.>", "<.a@b>", "<a..b@c>", "<a\x7f@b>", "<a\x00@b>", "<a\t@b>", "<a@b\r\n>", "\xff", "<\xff@b>",
	"<!#$%&'*+-/=?^_`{|}~@x>",
}

func TestPatchParseMsgIDSame(t *testing.T) {
	check := func(s string) {
		t.Helper()
		got, gotErr := parseMsgID(s)
		want, wantErr := origParseMsgID(s)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("parseMsgID(%q) = %q, %v; original %q, %v", s, got, gotErr, want, wantErr)
		}
		gotL, gotLErr := parseMsgIDList(s)
		wantL, wantLErr := origParseMsgIDList(s)
		if !reflect.DeepEqual(gotL, wantL) || (gotLErr == nil) != (wantLErr == nil) {
			t.Errorf("parseMsgIDList(%q) = %q, %v; original %q, %v", s, gotL, gotLErr, wantL, wantLErr)
		}
	}
	for _, s := range msgIDCases {
		check(s)
	}
	// Random ids built from printable ASCII around one or two '@'.
	rng := rand.New(rand.NewSource(12))
	for i := 0; i < 50000; i++ {
		n := rng.Intn(12)
		var b strings.Builder
		if rng.Intn(10) != 0 {
			b.WriteByte('<')
		}
		for j := 0; j < n; j++ {
			if rng.Intn(6) == 0 {
				b.WriteByte('@')
			} else {
				b.WriteByte(byte('!' + rng.Intn('~'-'!'+1)))
			}
		}
		if rng.Intn(10) != 0 {
			b.WriteByte('>')
		}
		check(b.String())
	}
}

func FuzzPatchParseMsgID(f *testing.F) {
	for _, s := range msgIDCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, gotErr := parseMsgID(s)
		want, wantErr := origParseMsgID(s)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("parseMsgID(%q) = %q, %v; original %q, %v", s, got, gotErr, want, wantErr)
		}
		gotL, gotLErr := parseMsgIDList(s)
		wantL, wantLErr := origParseMsgIDList(s)
		if !reflect.DeepEqual(gotL, wantL) || (gotLErr == nil) != (wantLErr == nil) {
			t.Errorf("parseMsgIDList(%q) = %q, %v; original %q, %v", s, gotL, gotLErr, wantL, wantLErr)
		}
	})
}

var dateCases = []string{
	"", "Mon, 2 Jan 2006 15:04:05 -0700", "Tue, 02 Jan 2006 15:04:05 +0100", "Wed, 2 Jan 06 15:04 -0700",
	"Thu, 20 Nov 1997 09:55:06 MDT", "Thu, 20 Nov 1997 09:55:06 MDT (MDT)", "Tue, 20 Nov 1997 09:55:06 GMT",
	"Fri, 21 Nov 1997 09:55:06 -0600 (MDT)", "Sat, 1 Jan 2000 00:00:00 UT", "Sun, 31 Dec 2023 23:59:59 +1400",
	"2 Jan 2006 15:04:05 -0700", "Mon, 2 Jan 2006 15:04:05", "Mon,  2 Jan 2006 15:04:05 -0700",
	"Mon, 32 Jan 2006 15:04:05 -0700", "Mon, 2 Foo 2006 15:04:05 -0700", "Mon, 2 Jan 2006 25:04:05 -0700",
	"Xyz, 2 Jan 2006 15:04:05 -0700", "mon, 2 Jan 2006 15:04:05 -0700", "Mon,2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 -0700 (comment", "Mon, 2 Jan 2006 15:04:05 -07", "Tue, 2 Jan 2006 15:04:05 T",
	"Mon, 2 Jan 2006 15:04:05 -0700\r\n", "Mon, 2 Jan 2006\r\n 15:04:05 -0700", "Mon, 2 Jan 2006 15:04:05 \r-0700",
	"Mon, 2 Jan 2006 15:04:05 EST", "Mon, 2 Jan 2006 15:04:05 PDT", "Mon, 7 Feb 2026 15:04:05.123 -0700",
	"Fri, 29 Feb 2024 12:00:00 +0000", "Fri, 29 Feb 2023 12:00:00 +0000", "Mon, 2 Jan 2006 15:04:05 +0000 (UTC)",
}

func sameTime(a, b time.Time) bool {
	if !a.Equal(b) {
		return false
	}
	an, ao := a.Zone()
	bn, bo := b.Zone()
	return an == bn && ao == bo
}

func TestPatchParseEnvelopeDateSame(t *testing.T) {
	check := func(s string) {
		t.Helper()
		got, gotErr := parseEnvelopeDate(s)
		want, wantErr := netmail.ParseDate(s)
		if !sameTime(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("parseEnvelopeDate(%q) = %v, %v; ParseDate %v, %v", s, got, gotErr, want, wantErr)
		}
	}
	for _, s := range dateCases {
		check(s)
	}
	// Random dates in every layout family, with and without a weekday.
	rng := rand.New(rand.NewSource(34))
	days := []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	zones := []string{"-0700", "+0000", "+1345", "MST", "UT", "GMT", "EDT", "PST", "-0700 (PDT)", "Z", "+01", ""}
	for i := 0; i < 20000; i++ {
		ts := time.Unix(rng.Int63n(4e9), 0).UTC()
		layout := []string{"2 Jan 2006 15:04:05", "02 Jan 2006 15:04:05", "2 Jan 06 15:04", "2 Jan 2006 15:04"}[rng.Intn(4)]
		s := ts.Format(layout) + " " + zones[rng.Intn(len(zones))]
		if rng.Intn(4) != 0 {
			s = days[rng.Intn(7)] + ", " + s
		}
		check(s)
	}
}

func FuzzPatchParseEnvelopeDate(f *testing.F) {
	for _, s := range dateCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, gotErr := parseEnvelopeDate(s)
		want, wantErr := netmail.ParseDate(s)
		if !sameTime(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("parseEnvelopeDate(%q) = %v, %v; ParseDate %v, %v", s, got, gotErr, want, wantErr)
		}
	})
}

func BenchmarkPatchParseEnvelopeDate(b *testing.B) {
	for _, s := range []string{"Mon, 2 Jan 2006 15:04:05 -0700", "2 Jan 2006 15:04:05 -0700"} {
		b.Run(s[:3], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := parseEnvelopeDate(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
