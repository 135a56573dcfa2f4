package imapmemserver

// Differential test of append-size.patch (PATCHES.md): appendLiteral
// reserves its buffer from the literal's size instead of growing it by
// doubling; what it stores must be what beta.8's ReadFrom stores, for any
// size and for a literal that ends early.

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
)

// sizedLiteral is an imap.LiteralReader announcing size bytes and holding
// what r holds (fewer when the connection ended early).
type sizedLiteral struct {
	io.Reader
	size int64
}

func (l sizedLiteral) Size() int64 { return l.size }

func TestPatchAppendSize(t *testing.T) {
	for _, tc := range []struct {
		name       string
		size, have int
	}{
		{"empty", 0, 0},
		{"one byte", 1, 1},
		{"511", 511, 511},
		{"512", 512, 512},
		{"4 KiB", 4096, 4096},
		{"64 KiB", 65536, 65536},
		{"above the cap", maxPresize + 5, maxPresize + 5},
		{"ends early", 100, 50},
		{"announced large, sends little", 90 << 20, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(strings.Repeat("0123456789abcdef", tc.have/16+1)[:tc.have])
			var want bytes.Buffer // beta.8's appendLiteral
			if _, err := want.ReadFrom(sizedLiteral{bytes.NewReader(data), int64(tc.size)}); err != nil {
				t.Fatal(err)
			}
			mbox := NewMailbox("INBOX", 1)
			if _, err := mbox.appendLiteral(sizedLiteral{bytes.NewReader(data), int64(tc.size)}, &imap.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			got := mbox.l[0].buf
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("stored %d bytes, beta.8 %d (or different bytes)", len(got), want.Len())
			}
			// One buffer of about the literal's size: beta.8's doubling
			// left up to twice that (8 KiB for a 4 KiB literal).
			if tc.size == tc.have && tc.size <= maxPresize {
				if limit := tc.size + bytes.MinRead + tc.size/8 + 64; cap(got) > limit {
					t.Errorf("buffer of %d bytes for a %d-byte literal, want at most %d", cap(got), tc.size, limit)
				}
			}
		})
	}
}
