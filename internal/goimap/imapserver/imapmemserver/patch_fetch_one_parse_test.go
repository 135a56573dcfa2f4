package imapmemserver

// Differential test of fetch-one-parse.patch (PATCHES.md): a FETCH of
// ENVELOPE and a header section of the whole message parses the header
// once for both; the envelope and the section served must be what beta.8
// computes from the message's bytes (ExtractEnvelope of its parsed header,
// ExtractBodySection), whatever the message and the section.

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
)

// checkOneParse derives msg's envelope and item's section with one parse,
// then checks both against beta.8's.
func checkOneParse(t *testing.T, name string, raw []byte, item *imap.FetchItemBodySection) {
	t.Helper()
	msg := &message{buf: raw}
	wantEnv := msg.parseEnvelope()
	wantSection := imapserver.ExtractBodySection(bytes.NewReader(raw), item)
	msg.parseHeaderOnce(&imap.FetchOptions{Envelope: true, BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierText}, item}})
	if got := msg.envelope(); !reflect.DeepEqual(got, wantEnv) {
		t.Errorf("%s, %+v: envelope %+v, beta.8 %+v", name, *item, got, wantEnv)
	}
	for range 2 {
		if got := msg.bodySection(item); !bytes.Equal(got, wantSection) || (got == nil) != (wantSection == nil) {
			t.Errorf("%s, %+v: section %q, beta.8 %q", name, *item, got, wantSection)
		}
	}
}

func TestPatchFetchOneParseSame(t *testing.T) {
	for name, raw := range fetchCacheMessages {
		for _, item := range fetchCacheSections() {
			if len(item.Part) == 0 && item.Specifier == imap.PartSpecifierHeader {
				checkOneParse(t, name, []byte(raw), item)
			}
		}
	}
}

// TestPatchFetchOneParseCaches shows the one parse at work: after it, the
// envelope and the section are both cached (served again without work),
// and a FETCH without ENVELOPE, or with a section of a part, derives
// nothing ahead.
func TestPatchFetchOneParseCaches(t *testing.T) {
	raw := []byte(fetchCacheMessages["plain"])
	item := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"Subject", "Message-Id"}, Peek: true}
	msg := &message{buf: raw}
	msg.parseHeaderOnce(&imap.FetchOptions{Envelope: true, BodySection: []*imap.FetchItemBodySection{item}})
	if msg.cachedEnvelope.Load() == nil {
		t.Error("envelope not cached by the one parse")
	}
	if s := msg.cachedSection.Load(); s == nil || !s.matches(item) {
		t.Error("header section not cached by the one parse")
	}
	if n := testing.AllocsPerRun(100, func() { msg.envelope(); msg.bodySection(item) }); n != 0 {
		t.Errorf("envelope and section after the one parse allocated %.0f times, want 0", n)
	}
	for _, opts := range []*imap.FetchOptions{
		{BodySection: []*imap.FetchItemBodySection{item}}, // no ENVELOPE: fetch does not call it
		{Envelope: true, BodySection: []*imap.FetchItemBodySection{{Part: []int{1}, Specifier: imap.PartSpecifierHeader}}},
		{Envelope: true},
	} {
		other := &message{buf: raw}
		if opts.Envelope {
			other.parseHeaderOnce(opts)
		}
		if other.cachedEnvelope.Load() != nil || other.cachedSection.Load() != nil {
			t.Errorf("options %+v: derived ahead, want nothing", opts)
		}
	}
}

// FuzzPatchFetchOneParse: for any message bytes and field name, the
// envelope and HEADER, HEADER.FIELDS and HEADER.FIELDS.NOT from one parse
// are beta.8's.
func FuzzPatchFetchOneParse(f *testing.F) {
	for _, raw := range fetchCacheMessages {
		f.Add(raw, "Subject")
	}
	f.Fuzz(func(t *testing.T, raw, field string) {
		for _, item := range []*imap.FetchItemBodySection{
			{Specifier: imap.PartSpecifierHeader},
			{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{field, "From"}},
			{Specifier: imap.PartSpecifierHeader, HeaderFieldsNot: []string{field}},
			{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{field}, Partial: &imap.SectionPartial{Offset: 1, Size: 7}},
		} {
			checkOneParse(t, "fuzz", []byte(raw), item)
		}
	})
}

// BenchmarkPatchFetchOneParse: the envelope and the HEADER.FIELDS a
// mailbench session asks of a message fetched for the first time, derived
// with two parses of its header (before the patch) and with one.
func BenchmarkPatchFetchOneParse(b *testing.B) {
	raw := []byte("Received: from client.test by target.test; Fri, 04 Dec 2026 10:00:00 +0000\r\n" +
		"From: Alice Sender <alice@example.test>\r\nTo: bob@example.test, carol@example.test\r\n" +
		"Subject: the quarterly numbers, revised\r\nDate: Fri, 04 Dec 2026 10:00:00 +0000\r\n" +
		"Message-Id: <r884f4fa7-000000012112@example.test>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nX-Mailbench-Id: r884f4fa7-000000012112\r\n\r\n" +
		string(bytes.Repeat([]byte("body line of the message, long enough to be a line\r\n"), 60)))
	item := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, Peek: true,
		HeaderFields: []string{"From", "To", "Subject", "Date", "Message-Id", "X-Mailbench-Id"}}
	opts := &imap.FetchOptions{Envelope: true, BodySection: []*imap.FetchItemBodySection{item}}
	b.Run("two parses", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msg := &message{buf: raw}
			msg.envelope()
			msg.bodySection(item)
		}
	})
	b.Run("one parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msg := &message{buf: raw}
			msg.parseHeaderOnce(opts)
			msg.envelope()
			msg.bodySection(item)
		}
	})
}
