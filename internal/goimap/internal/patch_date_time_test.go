package internal

// Differential test for mailbench's date-time.patch: DecodeDateTime gives
// what beta.8's gives (time.Parse(DateTimeLayout, s) of the quoted
// string): the same instant, zone name and offset, and the same Location
// (time.Local when it applies), and the same error text; with time.Local
// as UTC and as a zone of its own.

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

// beta8DecodeDateTime is beta.8's DecodeDateTime.
func beta8DecodeDateTime(dec *imapwire.Decoder) (time.Time, error) {
	var s string
	if !dec.Quoted(&s) {
		return time.Time{}, nil
	}
	t, err := time.Parse(DateTimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("in date-time: %v", err)
	}
	return t, err
}

// sameDateTime checks that the patched and beta.8's DecodeDateTime agree
// on the quoted string s.
func sameDateTime(t *testing.T, s string) {
	t.Helper()
	wire := `"` + s + `"`
	got, gotErr := DecodeDateTime(imapwire.NewDecoder(bufio.NewReader(strings.NewReader(wire)), imapwire.ConnSideClient))
	want, wantErr := beta8DecodeDateTime(imapwire.NewDecoder(bufio.NewReader(strings.NewReader(wire)), imapwire.ConnSideClient))
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%q: error %v, beta.8 %v", s, gotErr, wantErr)
	}
	gotName, gotOff := got.Zone()
	wantName, wantOff := want.Zone()
	if !got.Equal(want) || got.IsZero() != want.IsZero() || gotName != wantName || gotOff != wantOff ||
		got.Location().String() != want.Location().String() || (got.Location() == time.Local) != (want.Location() == time.Local) ||
		got.String() != want.String() {
		t.Fatalf("%q: %v (%s), beta.8 %v (%s)", s, got, got.Location(), want, want.Location())
	}
}

// dateTimeCases are the forms and boundaries the fast path takes or
// leaves to time.Parse.
func dateTimeCases() []string {
	cases := []string{
		"04-Dec-2026 04:22:26 +0000", " 4-Dec-2026 04:22:26 +0000", "4-Dec-2026 04:22:26 +0000",
		"31-Jan-2024 23:59:59 -0700", "29-Feb-2024 00:00:00 +0100", "29-Feb-2023 00:00:00 +0100",
		"30-Feb-2024 00:00:00 +0100", "31-Apr-2026 12:00:00 +0000", "00-Jan-2026 12:00:00 +0000",
		"32-Jan-2026 12:00:00 +0000", "01-jan-2026 12:00:00 +0000", "01-JAN-2026 12:00:00 +0000",
		"01-Jax-2026 12:00:00 +0000", "01-Jan-0000 00:00:00 +0000", "31-Dec-9999 23:59:59 -2359",
		"01-Jan-2026 24:00:00 +0000", "01-Jan-2026 23:60:00 +0000", "01-Jan-2026 23:59:60 +0000",
		"01-Jan-2026 5:00:00 +0000", "01-Jan-2026  05:00:00 +0000", "01-Jan-2026 05:00:00  +0000",
		"01-Jan-2026 05:00:00 +2400", "01-Jan-2026 05:00:00 +2500", "01-Jan-2026 05:00:00 +0060",
		"01-Jan-2026 05:00:00 +0061", "01-Jan-2026 05:00:00 -0000", "01-Jan-2026 05:00:00 +0530",
		"01-Jan-2026 05:00:00 -0930", "01-Jan-2026 05:00:00 *0100", "01-Jan-2026 05:00:00 +01:0",
		"01-Jan-2026 05:00:00 +010", "01-Jan-2026 05:00:00.5 +0000", "01-Jan-2026 05:00:00 UTC",
		"01-Jan-2026T05:00:00 +0000", "01/Jan/2026 05:00:00 +0000", "01-Jan-2026 05:00:00 +0000 ",
		"1x-Jan-2026 05:00:00 +0000", "01-Jan-20x6 05:00:00 +0000", "01-Jan-2026 0x:00:00 +0000",
		"", "x", strings.Repeat("9", 26),
	}
	for m := time.January; m <= time.December; m++ {
		cases = append(cases, fmt.Sprintf("28-%s-2026 10:11:12 +0200", m.String()[:3]))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		t := time.Unix(r.Int64N(400*365*86400)-100*365*86400, 0).In(time.FixedZone("", (r.IntN(53)-26)*1800))
		s := t.Format(DateTimeLayout)
		cases = append(cases, s)
		// One byte changed: mostly forms the fast path must leave alone.
		b := []byte(s)
		b[r.IntN(len(b))] = " -+:0123456789aJnF"[r.IntN(18)]
		cases = append(cases, string(b))
	}
	return cases
}

func TestPatchDateTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("CET", 3600), time.FixedZone("", -7*3600), time.FixedZone("IST", 5*3600+1800)}
	saved := time.Local
	t.Cleanup(func() { time.Local = saved })
	for _, zone := range zones {
		time.Local = zone
		for _, s := range dateTimeCases() {
			sameDateTime(t, s)
		}
	}
	time.Local = saved
	for _, s := range dateTimeCases() {
		sameDateTime(t, s)
	}

	// The fast path takes the usual form (else it measured nothing).
	for _, s := range []string{"04-Dec-2026 04:22:26 +0000", " 4-Dec-2026 04:22:26 -0700"} {
		if _, ok := parseDateTime(s); !ok {
			t.Errorf("parseDateTime(%q) left it to time.Parse", s)
		}
	}
	dec := func() *imapwire.Decoder {
		return imapwire.NewDecoder(bufio.NewReader(strings.NewReader(`"04-Dec-2026 04:22:26 +0000"`)), imapwire.ConnSideClient)
	}
	before := testing.AllocsPerRun(50, func() { beta8DecodeDateTime(dec()) })
	after := testing.AllocsPerRun(50, func() { DecodeDateTime(dec()) })
	if after > before {
		t.Errorf("%.0f allocations, beta.8 %.0f", after, before)
	}
}

func FuzzPatchDateTime(f *testing.F) {
	for _, s := range dateTimeCases()[:60] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsAny(s, "\"\\\r\n") {
			return // not a quoted string's content
		}
		sameDateTime(t, s)
	})
}

// BenchmarkPatchDateTime: the parse alone, beta.8's time.Parse against
// the patch's.
func BenchmarkPatchDateTime(b *testing.B) {
	const s = "04-Dec-2026 04:22:26 +0000"
	b.Run("beta8", func(b *testing.B) {
		for b.Loop() {
			if _, err := time.Parse(DateTimeLayout, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("patched", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseDateTime(s); !ok {
				b.Fatal(s)
			}
		}
	})
}
