package imapclient

// Tests for mailbench's body-alloc.patch: a single part's structure, its
// extension data and its text fields are decoded into one allocation. The
// decoder of the tree before the patch is kept below (origReadBody and the
// functions it calls, renamed); both decode the same BODYSTRUCTUREs, good
// and bad, to the same values and errors and leave the same bytes unread.

import (
	"bufio"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	imap "github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

var patchBodyAllocCases = []string{
	// Dovecot's, with the extension data.
	`("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 4048 80 NIL NIL NIL NIL)`,
	// Without extension data, upper case.
	`("TEXT" "PLAIN" ("CHARSET" "US-ASCII") NIL NIL "7BIT" 1152 23)`,
	// Every field, an encoded description, a disposition, languages and a location.
	`("text" "html" ("charset" "utf-8" "format" "flowed") "<id@x>" "desc =?utf-8?q?caf=C3=A9?=" "quoted-printable" 2000 40 "md5sum" ("inline" ("filename" "a.html")) ("en" "fr") "http://loc")`,
	// A language as a single string, no location.
	`("text" "plain" NIL NIL NIL "8bit" 10 1 NIL NIL "en")`,
	// Multipart with an attachment and the multipart's own extension data.
	`(("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 10 1 NIL NIL NIL NIL)("application" "pdf" ("name" "x.pdf") NIL NIL "base64" 5000 NIL ("attachment" ("filename" "x.pdf")) NIL NIL) "mixed" ("boundary" "b1") NIL NIL NIL)`,
	// Nested multipart.
	`((("text" "plain" NIL NIL NIL "7bit" 1 1)("text" "html" NIL NIL NIL "7bit" 2 1) "alternative")("image" "png" NIL "<c@x>" NIL "base64" 30 NIL) "related")`,
	// message/rfc822 with its envelope, structure and lines, and extension data.
	`("message" "rfc822" NIL NIL NIL "7bit" 300 ("Mon, 7 Dec 2026 10:00:00 +0000" "subj" (("A" NIL "a" "x.test")) NIL NIL (("B" NIL "b" "y.test")) NIL NIL NIL "<m@x>") ("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 10 1) 12 NIL NIL NIL NIL)`,
	// message/global without lines' extension.
	`("message" "global" NIL NIL NIL "8bit" 30 (NIL "s" NIL NIL NIL NIL NIL NIL NIL NIL) ("text" "plain" NIL NIL NIL "7bit" 1 1) 2)`,
	// A NIL encoding (7bit by default), no lines for text (go-imap issue 557).
	`("text" "plain" NIL NIL NIL NIL 10)`,
	// Only the MD5 of the extension data.
	`("application" "octet-stream" NIL NIL NIL "base64" 100 "abc")`,
	// A literal subtype.
	"(\"text\" {5}\r\nplain NIL NIL NIL \"7bit\" 1 1)",
	// Extra extension data, discarded.
	`("text" "plain" NIL NIL NIL "7bit" 1 1 NIL NIL NIL NIL "more" (1 2))`,
	// Bad: a key without a value, a size that is not a number, cut short,
	// a bad disposition, an unterminated list, a text part without lines.
	`("text" "plain" ("charset") NIL NIL "7bit" 1 1)`,
	`("text" "plain" NIL NIL NIL "7bit" x 1)`,
	`("text" "plain" NIL`,
	`("text" "plain" NIL NIL NIL "7bit" 10 1 NIL "inline" NIL NIL)`,
	`("text" "plain" NIL NIL NIL "7bit" 10 1 NIL (`,
	`("text" "plain" NIL NIL NIL "7bit" 10 NIL)`,
	`(("text" "plain" NIL NIL NIL "7bit" 1 1) )`,
	`()`,
}

// decodeBody decodes s with read and returns the structure, the error's
// text and what was left unread.
func decodeBody(s string, read func(*imapwire.Decoder, *Options) (imap.BodyStructure, error)) (imap.BodyStructure, string, string) {
	br := bufio.NewReader(strings.NewReader(s))
	dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
	bs, err := read(dec, &Options{})
	rest, _ := io.ReadAll(br)
	return bs, fmt.Sprint(err), string(rest)
}

func checkBodySame(t *testing.T, s string) {
	t.Helper()
	got, gotErr, gotRest := decodeBody(s, readBody)
	want, wantErr, wantRest := decodeBody(s, origReadBody)
	if !reflect.DeepEqual(got, want) || gotErr != wantErr || gotRest != wantRest {
		t.Errorf("%q:\npatched %#v, %s, rest %q\nbefore  %#v, %s, rest %q", s, got, gotErr, gotRest, want, wantErr, wantRest)
	}
}

func TestPatchBodyAllocSame(t *testing.T) {
	for _, s := range patchBodyAllocCases {
		checkBodySame(t, s)
		// Every prefix: a structure cut anywhere.
		for i := range len(s) {
			checkBodySame(t, s[:i])
		}
	}
	if _, err, _ := decodeBody(patchBodyAllocCases[0], readBody); err != "<nil>" {
		t.Fatalf("the first case does not decode: %s", err)
	}
}

func FuzzPatchBodyAlloc(f *testing.F) {
	for _, s := range patchBodyAllocCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		checkBodySame(t, s)
	})
}

// TestPatchBodyAllocAllocations: a text part with extension data took
// three allocations for its part, its text fields and its extension data;
// it takes one (with the decoder's own and the parameters' map, 12 became
// 10).
func TestPatchBodyAllocAllocations(t *testing.T) {
	s := patchBodyAllocCases[0]
	count := func(read func(*imapwire.Decoder, *Options) (imap.BodyStructure, error)) float64 {
		r := strings.NewReader(s)
		br := bufio.NewReaderSize(r, 4096)
		options := &Options{}
		return testing.AllocsPerRun(200, func() {
			r.Reset(s)
			br.Reset(r)
			dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
			if _, err := read(dec, options); err != nil {
				t.Fatal(err)
			}
		})
	}
	patched, before := count(readBody), count(origReadBody)
	if patched > before-2 {
		t.Errorf("%.0f allocations per structure, %.0f before: want at least 2 fewer", patched, before)
	}
}

// The decoder before body-alloc.patch.

func origReadBody(dec *imapwire.Decoder, options *Options) (imap.BodyStructure, error) {
	if !dec.ExpectSpecial('(') {
		return nil, dec.Err()
	}

	var (
		mediaType string
		token     string
		bs        imap.BodyStructure
		err       error
	)
	if dec.String(&mediaType) {
		token = "body-type-1part"
		bs, err = origReadBodyType1part(dec, mediaType, options)
	} else {
		token = "body-type-mpart"
		bs, err = origReadBodyTypeMpart(dec, options)
	}
	if err != nil {
		return nil, fmt.Errorf("in %v: %v", token, err)
	}

	for dec.SP() {
		if !dec.DiscardValue() {
			return nil, dec.Err()
		}
	}

	if !dec.ExpectSpecial(')') {
		return nil, dec.Err()
	}

	return bs, nil
}

func origReadBodyType1part(dec *imapwire.Decoder, typ string, options *Options) (*imap.BodyStructureSinglePart, error) {
	bs := imap.BodyStructureSinglePart{Type: typ}

	if !dec.ExpectSP() || !dec.ExpectString(&bs.Subtype) || !dec.ExpectSP() {
		return nil, dec.Err()
	}
	var err error
	bs.Params, err = readBodyFldParam(dec, options)
	if err != nil {
		return nil, err
	}

	var description string
	if !dec.ExpectSP() || !dec.ExpectNString(&bs.ID) || !dec.ExpectSP() || !dec.ExpectNString(&description) || !dec.ExpectSP() || !dec.ExpectNString(&bs.Encoding) || !dec.ExpectSP() || !dec.ExpectBodyFldOctets(&bs.Size) {
		return nil, dec.Err()
	}

	// Content-Transfer-Encoding should always be set, but some non-standard
	// servers leave it NIL. Default to 7bit.
	if bs.Encoding == "" {
		bs.Encoding = "7bit"
	}

	// TODO: handle errors
	bs.Description, _ = options.decodeText(description)

	// Some servers don't include the extra fields for message and text
	// (see https://github.com/emersion/go-imap/issues/557)
	hasSP := dec.SP()
	if !hasSP {
		return &bs, nil
	}

	if strings.EqualFold(bs.Type, "message") && (strings.EqualFold(bs.Subtype, "rfc822") || strings.EqualFold(bs.Subtype, "global")) {
		var msg imap.BodyStructureMessageRFC822

		msg.Envelope, err = readEnvelope(dec, options)
		if err != nil {
			return nil, err
		}

		if !dec.ExpectSP() {
			return nil, dec.Err()
		}

		msg.BodyStructure, err = origReadBody(dec, options)
		if err != nil {
			return nil, err
		}

		if !dec.ExpectSP() || !dec.ExpectNumber64(&msg.NumLines) {
			return nil, dec.Err()
		}

		bs.MessageRFC822 = &msg
		hasSP = false
	} else if strings.EqualFold(bs.Type, "text") {
		var text imap.BodyStructureText

		if !dec.ExpectNumber64(&text.NumLines) {
			return nil, dec.Err()
		}

		bs.Text = &text
		hasSP = false
	}

	if !hasSP {
		hasSP = dec.SP()
	}
	if hasSP {
		bs.Extended, err = origReadBodyExt1part(dec, options)
		if err != nil {
			return nil, fmt.Errorf("in body-ext-1part: %v", err)
		}
	}

	return &bs, nil
}

func origReadBodyExt1part(dec *imapwire.Decoder, options *Options) (*imap.BodyStructureSinglePartExt, error) {
	var ext imap.BodyStructureSinglePartExt

	var md5 string
	if !dec.ExpectNString(&md5) {
		return nil, dec.Err()
	}

	if !dec.SP() {
		return &ext, nil
	}

	var err error
	ext.Disposition, err = readBodyFldDsp(dec, options)
	if err != nil {
		return nil, fmt.Errorf("in body-fld-dsp: %v", err)
	}

	if !dec.SP() {
		return &ext, nil
	}

	ext.Language, err = readBodyFldLang(dec)
	if err != nil {
		return nil, fmt.Errorf("in body-fld-lang: %v", err)
	}

	if !dec.SP() {
		return &ext, nil
	}

	if !dec.ExpectNString(&ext.Location) {
		return nil, dec.Err()
	}

	return &ext, nil
}

func origReadBodyTypeMpart(dec *imapwire.Decoder, options *Options) (*imap.BodyStructureMultiPart, error) {
	var bs imap.BodyStructureMultiPart

	for {
		child, err := origReadBody(dec, options)
		if err != nil {
			return nil, err
		}
		bs.Children = append(bs.Children, child)

		if dec.SP() && dec.String(&bs.Subtype) {
			break
		}
	}

	if dec.SP() {
		var err error
		bs.Extended, err = readBodyExtMpart(dec, options)
		if err != nil {
			return nil, fmt.Errorf("in body-ext-mpart: %v", err)
		}
	}

	return &bs, nil
}
