package imapclient

// Differential test for mailbench's envelope-addresses.patch: with
// Options.SkipEnvelopeAddresses an envelope is accepted or refused exactly
// as without it, its other fields are the same, the decoder stops at the
// same byte, and only the address lists are left out.

import (
	"bufio"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

func decodeEnvelope(t *testing.T, wire string, skip bool) (env *imap.Envelope, err error, rest string) {
	t.Helper()
	br := bufio.NewReaderSize(strings.NewReader(wire), 16)
	if len(wire) > 40 {
		// Also with the whole input buffered, where the quoted runs are.
		br = bufio.NewReaderSize(strings.NewReader(wire), 4096)
	}
	dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
	env, err = readEnvelope(dec, &Options{SkipEnvelopeAddresses: skip})
	b, _ := io.ReadAll(br)
	return env, err, string(b)
}

func TestPatchSkipEnvelopeAddresses(t *testing.T) {
	addr := `("Jo \"Q\" Public" NIL "jo" "example.org")`
	lit := "({5}\r\nJo Jo NIL \"jo\" \"example.org\")"
	accepted, refused := 0, 0
	for _, env := range []string{
		`("Mon, 7 Feb 1994 21:52:25 -0800" "subject" (` + addr + `) (` + addr + `) NIL (` + addr + addr + `) NIL NIL NIL "<id@example.org>")`,
		`(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL)`,
		`(NIL "s" (` + lit + `) NIL NIL NIL NIL NIL "<a@b>" "<c@d>")`,
		`(NIL "s" ((NIL NIL "group" NIL)("x" NIL "m" "h")(NIL NIL NIL NIL)) NIL NIL NIL NIL NIL NIL NIL)`,
		`(NIL "s" ("jo" NIL "m" "h") NIL NIL NIL NIL NIL NIL NIL)`,       // address list without its parentheses
		`(NIL "s" (("jo" NIL "m")) NIL NIL NIL NIL NIL NIL NIL)`,         // three fields
		`(NIL "s" (("jo" NIL "m" "h" "x")) NIL NIL NIL NIL NIL NIL NIL)`, // five
		`(NIL "s" ((jo NIL "m" "h")) NIL NIL NIL NIL NIL NIL NIL)`,       // an atom
		`(NIL "s" (("unterminated NIL "m" "h")) NIL NIL NIL NIL NIL NIL NIL)`,
		`(NIL "s" (("a\\" NIL "m" "h")) NIL NIL NIL NIL NIL NIL NIL)`,
		`(NIL "s" ((NIL NIL "m" "h")) NIL NIL NIL NIL NIL NIL)`, // a field short
		`(NIL "s" ((NIL NIL "m" "h"`,                            // cut
		`(NIL "s" ((NIL NIL "m" "h")) NIL NIL NIL NIL NIL NIL NIL`,
		`(NIL "s" ((NILL NIL "m" "h")) NIL NIL NIL NIL NIL NIL NIL)`,
	} {
		wire := env + " TAIL\r\n"
		want, wantErr, wantRest := decodeEnvelope(t, wire, false)
		got, gotErr, gotRest := decodeEnvelope(t, wire, true)
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s:\n without skip: %v\n with skip: %v", env, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			refused++
			continue
		}
		accepted++
		if gotRest != wantRest {
			t.Errorf("%s: rest %q with skip, %q without", env, gotRest, wantRest)
		}
		if got.From != nil || got.Sender != nil || got.ReplyTo != nil || got.To != nil || got.Cc != nil || got.Bcc != nil {
			t.Errorf("%s: addresses kept: %+v", env, got)
		}
		want.From, want.Sender, want.ReplyTo, want.To, want.Cc, want.Bcc = nil, nil, nil, nil, nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n with skip %+v\n without  %+v", env, got, want)
		}
	}
	if accepted < 4 || refused < 4 {
		t.Errorf("%d envelopes accepted, %d refused: the cases no longer cover both", accepted, refused)
	}
}
