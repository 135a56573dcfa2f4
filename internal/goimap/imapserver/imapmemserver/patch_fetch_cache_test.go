package imapmemserver

// Differential test of fetch-cache.patch (PATCHES.md): a message's
// envelope, its BODY[] and its last header section are derived once and
// served again; what is served must be what beta.8 computes on every
// FETCH (imapserver.ExtractBodySection and ExtractEnvelope over the
// message's bytes), whatever the message and in whatever order sections
// are asked.

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
)

var fetchCacheMessages = map[string]string{
	"plain": "From: Alice <alice@example.test>\r\nTo: bob@example.test\r\nSubject: hello\r\n" +
		"Date: Fri, 04 Dec 2026 10:00:00 +0000\r\nMessage-Id: <1@example.test>\r\n\r\nbody line\r\n",
	"lf only":         "From: a@example.test\nSubject: lf\n\nbody\n",
	"folded":          "Subject: a long\r\n\tfolded subject\r\nX-Empty:\r\nFrom: a@example.test\r\n\r\nbody\r\n",
	"header only":     "Subject: no body\r\nFrom: a@example.test\r\n",
	"blank first":     "\r\nbody with no header\r\n",
	"empty":           "",
	"malformed":       "this is not a header line\r\nSubject: x\r\n\r\nbody\r\n",
	"trailing spaces": "Subject:   spaced   \r\nfrom: lower@example.test\r\n\r\nbody\r\n",
	"multipart": "From: a@example.test\r\nSubject: parts\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\npreamble\r\n--b\r\nContent-Type: text/plain\r\n\r\none\r\n" +
		"--b\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\nFrom: c@example.test\r\n\r\ninner body\r\n--b--\r\n",
	"8bit": "Subject: caf\xc3\xa9\r\nFrom: =?utf-8?q?Andr=C3=A9?= <andre@example.test>\r\n\r\nna\xc3\xafve\r\n",
}

func fetchCacheSections() []*imap.FetchItemBodySection {
	return []*imap.FetchItemBodySection{
		{},
		{Peek: true},
		{Partial: &imap.SectionPartial{Offset: 3, Size: 10}},
		{Specifier: imap.PartSpecifierHeader},
		{Specifier: imap.PartSpecifierHeader, Peek: true},
		{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"Subject", "FROM", "x-empty"}},
		{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"Subject", "FROM"}, Peek: true},
		{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"Subject"}},
		{Specifier: imap.PartSpecifierHeader, HeaderFieldsNot: []string{"Subject"}},
		{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"Subject"}, Partial: &imap.SectionPartial{Offset: 2, Size: 5}},
		{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"Subject"}, Partial: &imap.SectionPartial{Offset: 0, Size: 5}},
		{Specifier: imap.PartSpecifierText},
		{Specifier: imap.PartSpecifierMIME, Part: []int{1}},
		{Part: []int{1}},
		{Part: []int{2}, Specifier: imap.PartSpecifierHeader},
		{Part: []int{2}, Specifier: imap.PartSpecifierText},
	}
}

// TestPatchFetchCacheSections asks every section of every message several
// times, in two orders (each section three times in a row; all sections
// in turn, three rounds), and compares each answer with beta.8's.
func TestPatchFetchCacheSections(t *testing.T) {
	for name, raw := range fetchCacheMessages {
		sections := fetchCacheSections()
		want := make([][]byte, len(sections))
		for i, s := range sections {
			want[i] = imapserver.ExtractBodySection(bytes.NewReader([]byte(raw)), s)
		}
		check := func(order string, msg *message, i int) {
			t.Helper()
			got := msg.bodySection(sections[i])
			if !bytes.Equal(got, want[i]) || (got == nil) != (want[i] == nil) {
				t.Errorf("%s, %s, section %+v: got %q, beta.8 %q", name, order, *sections[i], got, want[i])
			}
		}
		repeated := &message{buf: []byte(raw)}
		for i := range sections {
			for range 3 {
				check("repeated", repeated, i)
			}
		}
		interleaved := &message{buf: []byte(raw)}
		for range 3 {
			for i := range sections {
				check("interleaved", interleaved, i)
			}
		}
	}
}

// TestPatchFetchCacheServesAgain shows the cache at work: the second
// BODY[] of a well-formed message is the message's own bytes, the second
// HEADER.FIELDS is the first's result, and a changed field list (or the
// caller's slice changed in place) is computed anew.
func TestPatchFetchCacheServesAgain(t *testing.T) {
	msg := &message{buf: []byte(fetchCacheMessages["plain"])}
	whole := &imap.FetchItemBodySection{Peek: true}
	msg.bodySection(whole)
	if got := msg.bodySection(whole); &got[0] != &msg.buf[0] {
		t.Errorf("second BODY[] is a copy, want the message's own bytes")
	}
	fields := []string{"Subject", "From"}
	item := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: fields, Peek: true}
	first := msg.bodySection(item)
	if second := msg.bodySection(item); &second[0] != &first[0] {
		t.Errorf("second HEADER.FIELDS was computed again, want the first's result")
	}
	fields[0] = "To" // the caller reuses its slice for another list
	got := msg.bodySection(item)
	want := imapserver.ExtractBodySection(bytes.NewReader(msg.buf), item)
	if !bytes.Equal(got, want) || !strings.HasPrefix(string(got), "From:") || strings.Contains(string(got), "Subject") {
		t.Errorf("HEADER.FIELDS (To From) after (Subject From): got %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { msg.bodySection(item); msg.envelope() }); n != 0 {
		t.Errorf("a section and an envelope served again allocated %.0f times, want 0", n)
	}
}

// TestPatchFetchCacheEnvelope compares the envelope served (first and
// later) with beta.8's parse, for every message.
func TestPatchFetchCacheEnvelope(t *testing.T) {
	for name, raw := range fetchCacheMessages {
		msg := &message{buf: []byte(raw)}
		want := msg.parseEnvelope()
		for i := range 3 {
			if got := msg.envelope(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, call %d: envelope %+v, beta.8 %+v", name, i+1, got, want)
			}
		}
	}
}

// FuzzPatchFetchCache: for any message bytes, BODY[], HEADER, and
// HEADER.FIELDS asked twice each are what beta.8 computes.
func FuzzPatchFetchCache(f *testing.F) {
	for _, raw := range fetchCacheMessages {
		f.Add(raw, "Subject")
	}
	f.Fuzz(func(t *testing.T, raw, field string) {
		msg := &message{buf: []byte(raw)}
		for _, item := range []*imap.FetchItemBodySection{
			{}, {Specifier: imap.PartSpecifierHeader},
			{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{field}},
			{Specifier: imap.PartSpecifierHeader, HeaderFieldsNot: []string{field}},
		} {
			want := imapserver.ExtractBodySection(bytes.NewReader([]byte(raw)), item)
			for range 2 {
				if got := msg.bodySection(item); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("%+v of %q: got %q, beta.8 %q", *item, raw, got, want)
				}
			}
		}
	})
}
