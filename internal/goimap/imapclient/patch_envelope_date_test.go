package imapclient

// Differential test for mailbench's envelope-date.patch: with
// Options.SkipEnvelopeDate an envelope is accepted or refused exactly as
// without it, the decoder stops at the same byte, and only Envelope.Date is
// left zero.

import (
	"bufio"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

func TestPatchSkipEnvelopeDate(t *testing.T) {
	decode := func(wire string, bufSize int, opts Options) (env any, date time.Time, err error, rest string) {
		br := bufio.NewReaderSize(strings.NewReader(wire), bufSize)
		dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
		e, err := readEnvelope(dec, &opts)
		b, _ := io.ReadAll(br)
		if e != nil {
			date = e.Date
			e.Date = time.Time{}
			env = *e
		}
		return env, date, err, string(b)
	}
	accepted, refused, dated := 0, 0, 0
	for _, env := range []string{
		`("Mon, 7 Feb 1994 21:52:25 -0800" "subject" (("Jo" NIL "jo" "example.org")) NIL NIL NIL NIL NIL NIL "<id@example.org>")`,
		`("7 Feb 1994 21:52:25 +0000" "s" NIL NIL NIL NIL NIL NIL NIL "<a@b>")`,
		`("not a date" "s" NIL NIL NIL NIL NIL NIL NIL NIL)`,
		`(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL)`,
		"({31}\r\nTue, 1 Dec 2026 10:00:00 +0100 \"s\" NIL NIL NIL NIL NIL NIL NIL NIL)",
		`("Mon, 7 Feb 1994 \"21:52\" -0800" "s" NIL NIL NIL NIL NIL NIL NIL NIL)`,
		`("a\\b" "s" NIL NIL NIL NIL NIL NIL NIL NIL)`,
		`("a\qb" "s" NIL NIL NIL NIL NIL NIL NIL NIL)`, // an escape IMAP does not have
		`(date "s" NIL NIL NIL NIL NIL NIL NIL NIL)`,   // an atom
		`("unterminated "s" NIL NIL NIL NIL NIL NIL NIL NIL)`,
		`(NILL "s" NIL NIL NIL NIL NIL NIL NIL NIL)`,
		`("Mon, 7 Feb 1994 21:52:25 -0800"`, // cut
		`("Mon, 7 Feb 1994 21:52:25 -0800""s" NIL NIL NIL NIL NIL NIL NIL NIL)`,
	} {
		wire := env + " TAIL\r\n"
		for _, size := range []int{16, 4096} { // split across fills, and all buffered
			for _, addrs := range []bool{false, true} {
				want, wantDate, wantErr, wantRest := decode(wire, size, Options{SkipEnvelopeAddresses: addrs})
				got, gotDate, gotErr, gotRest := decode(wire, size, Options{SkipEnvelopeAddresses: addrs, SkipEnvelopeDate: true})
				if (wantErr == nil) != (gotErr == nil) {
					t.Errorf("%s (buffer %d):\n without skip: %v\n with skip: %v", env, size, wantErr, gotErr)
					continue
				}
				if gotRest != wantRest {
					t.Errorf("%s (buffer %d): rest %q with skip, %q without", env, size, gotRest, wantRest)
				}
				if wantErr != nil {
					refused++
					continue
				}
				accepted++
				if !wantDate.IsZero() {
					dated++
				}
				if !gotDate.IsZero() {
					t.Errorf("%s: date %v kept with skip", env, gotDate)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s (buffer %d):\n with skip %+v\n without  %+v", env, size, got, want)
				}
			}
		}
	}
	if accepted < 4 || refused < 4 || dated < 2 {
		t.Errorf("%d envelopes accepted (%d dated), %d refused: the cases no longer cover all three", accepted, dated, refused)
	}
}
