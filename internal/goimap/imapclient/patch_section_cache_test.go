package imapclient

// Tests of mailbench's section-cache.patch (PATCHES.md): a FETCH
// response's body sections read through readSectionSpecCached must be
// those beta.8's readSectionSpec reads (kept below verbatim), with the
// same decoder state and errors after each, whatever comes in between;
// and a section repeated with the same bytes is not parsed again.

import (
	"bufio"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

func origReadSectionSpec(dec *imapwire.Decoder) (*imap.FetchItemBodySection, error) {
	var section imap.FetchItemBodySection

	var dot bool
	section.Part, dot = readSectionPart(dec)
	if dot || len(section.Part) == 0 {
		var specifier string
		if dot {
			if !dec.ExpectAtom(&specifier) {
				return nil, dec.Err()
			}
		} else {
			dec.Atom(&specifier)
		}
		specifier = strings.ToUpper(specifier)
		section.Specifier = imap.PartSpecifier(specifier)

		if specifier == "HEADER.FIELDS" || specifier == "HEADER.FIELDS.NOT" {
			if !dec.ExpectSP() {
				return nil, dec.Err()
			}
			var err error
			headerList, err := readHeaderList(dec)
			if err != nil {
				return nil, err
			}
			section.Specifier = imap.PartSpecifierHeader
			if specifier == "HEADER.FIELDS" {
				section.HeaderFields = headerList
			} else {
				section.HeaderFieldsNot = headerList
			}
		}
	}

	if !dec.ExpectSpecial(']') {
		return nil, dec.Err()
	}

	offset, err := readPartialOffset(dec)
	if err != nil {
		return nil, err
	}
	if offset != nil {
		section.Partial = &imap.SectionPartial{Offset: int64(*offset)}
	}

	return &section, nil
}

func describeSection(s *imap.FetchItemBodySection, err error) string {
	if err != nil {
		return "err=" + err.Error()
	}
	if s == nil {
		return "nil"
	}
	partial := "none"
	if s.Partial != nil {
		partial = fmt.Sprint(*s.Partial)
	}
	return fmt.Sprintf("%q %v %q %q peek=%v partial=%s", s.Specifier, s.Part, s.HeaderFields, s.HeaderFieldsNot, s.Peek, partial)
}

// decodeSections reads "BODY[" spec "]" items separated by SP from in,
// as handleFetch does, and describes everything observable.
func decodeSections(in string, bufSize int, oneByte bool, maxSize int64, orig bool) string {
	dec := testDecoder(in+"\r\n", bufSize, oneByte, false, maxSize) // restOf reads lines
	c := &Client{}
	var out strings.Builder
	for i := 0; i < 8; i++ {
		if !dec.Special('[') {
			break
		}
		var (
			s   *imap.FetchItemBodySection
			err error
		)
		if orig {
			s, err = origReadSectionSpec(dec)
		} else {
			s, err = c.readSectionSpecCached(dec)
		}
		fmt.Fprintf(&out, "%s n=%d; ", describeSection(s, err), dec.Consumed())
		if err != nil || !dec.SP() {
			break
		}
	}
	if dec.Err() != nil {
		out.WriteString("decErr=" + dec.Err().Error())
	}
	out.WriteString(" rest=" + restOf(dec))
	return out.String()
}

func checkSections(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	checkSameDecoding(t, decodeSections, in, bufSize, oneByte, maxSize)
}

// testDecoder decodes in through a bufio.Reader of bufSize bytes over a
// source that returns half of what is asked, or one byte per read, with
// MaxSize maxSize; primed, its first bytes are buffered already, as a
// response's are when the read loop reaches the part under test.
func testDecoder(in string, bufSize int, oneByte, primed bool, maxSize int64) *imapwire.Decoder {
	src := iotest.HalfReader(strings.NewReader(in))
	if oneByte {
		src = iotest.OneByteReader(strings.NewReader(in))
	}
	br := bufio.NewReaderSize(src, bufSize)
	if primed {
		br.Peek(1)
	}
	dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
	dec.MaxSize = maxSize
	return dec
}

// checkSameDecoding fails t when decode describes in differently with the
// code a patch replaced (orig) and with the patched code: the
// differential tests' comparison.
func checkSameDecoding(t *testing.T, decode func(in string, bufSize int, oneByte bool, maxSize int64, orig bool) string, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	want := decode(in, bufSize, oneByte, maxSize, true)
	got := decode(in, bufSize, oneByte, maxSize, false)
	if got != want {
		t.Fatalf("%q bufio %d oneByte %v MaxSize %d:\n got  %s\n want %s", in, bufSize, oneByte, maxSize, got, want)
	}
}

var sectionSpecs = []string{
	`[HEADER.FIELDS ("From" "To" "Subject" "Date" "Message-Id" "X-Mailbench-Id" "X-Mailbench-Sent")]`,
	`[HEADER.FIELDS (FROM TO)]`, `[]`, `[]<0>`, `[TEXT]<5>`, `[1.2.MIME]`, `[1.2]`, `[2]<10>`, `[HEADER]`,
	`[header.fields.not (X-A)]`, `[HEADER.FIELDS ("a]b")]`, `[HEADER.FIELDS (]`, `[]<x>`, `[1.]`, `[TEXT`,
	`[HEADER.FIELDS ("From" "To")]<7>`,
}

func TestPatchSectionCacheMatchesOriginal(t *testing.T) {
	for _, a := range sectionSpecs {
		for _, b := range sectionSpecs {
			for _, in := range []string{a + " " + a + " " + b + " " + a, b + " " + a + " " + a} {
				for _, bs := range []int{16, 64, 4096} {
					for _, ob := range []bool{false, true} {
						for _, ms := range []int64{0, 20, 90, 200} {
							checkSections(t, in, bs, ob, ms)
						}
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(19))
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for k := rng.Intn(6); k >= 0; k-- {
			if k < 5 {
				b.WriteByte(' ')
			}
			b.WriteString(sectionSpecs[rng.Intn(len(sectionSpecs))])
		}
		in := strings.TrimPrefix(b.String(), " ")
		checkSections(t, in, []int{16, 64, 4096}[rng.Intn(3)], rng.Intn(3) == 0, int64(rng.Intn(300)))
	}
}

func FuzzPatchSectionCache(f *testing.F) {
	for _, s := range sectionSpecs {
		f.Add(s+" "+s, int64(0))
	}
	f.Fuzz(func(t *testing.T, in string, maxSize int64) {
		checkSections(t, in, 64, false, maxSize)
	})
}

// The range fetch's section, repeated with the same bytes, is the same
// section and costs no allocation; a partial makes it a copy.
func TestPatchSectionCacheReuses(t *testing.T) {
	spec := sectionSpecs[0][1:]
	r := strings.NewReader("")
	br := bufio.NewReaderSize(r, 4096)
	dec := imapwire.NewDecoder(br, imapwire.ConnSideClient)
	c := &Client{}
	read := func(in string) *imap.FetchItemBodySection {
		r.Reset(in)
		br.Reset(r)
		br.Peek(1)
		s, err := c.readSectionSpecCached(dec)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	in := spec + " "
	first := read(in)
	if again := read(in); again != first {
		t.Errorf("the same section's bytes parsed again")
	}
	if allocs := testing.AllocsPerRun(50, func() { read(in) }); allocs > 0 {
		t.Errorf("%.0f allocations for a repeated section", allocs)
	}
	if p := read(spec + "<3> "); p == first || p.Partial == nil || p.Partial.Offset != 3 || first.Partial != nil {
		t.Errorf("a partial after the repeated section: %+v (first %+v)", p, first)
	}
	if len(first.HeaderFields) != 7 || first.HeaderFields[6] != "X-Mailbench-Sent" {
		t.Errorf("section %+v", first)
	}
}

// restOf reads what is left of the input (which ends in CRLF), line by
// line, for the differential tests to compare; a decoder error (MaxSize)
// ends it, and is part of what they compare.
func restOf(dec *imapwire.Decoder) string {
	var rest strings.Builder
	for {
		var line string
		dec.Text(&line)
		rest.WriteString(line)
		if !dec.CRLF() {
			break
		}
		rest.WriteString("\\r\\n")
	}
	if dec.Err() != nil {
		rest.WriteString(" restErr=" + dec.Err().Error())
	}
	return rest.String()
}
