package imapclient

// Equivalence test for mailbench's order.patch: writeFetchItems and
// statusItems must ask for the same items beta.8's code asked for (its
// map, kept here verbatim as a set), in one order every time.

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

func origFetchAtoms(options *imap.FetchOptions) map[string]bool {
	return map[string]bool{
		"BODY":          options.BodyStructure != nil && !options.BodyStructure.Extended,
		"BODYSTRUCTURE": options.BodyStructure != nil && options.BodyStructure.Extended,
		"ENVELOPE":      options.Envelope,
		"FLAGS":         options.Flags,
		"INTERNALDATE":  options.InternalDate,
		"RFC822.SIZE":   options.RFC822Size,
		"MODSEQ":        options.ModSeq,
	}
}

func origStatusItems(options *imap.StatusOptions) map[string]bool {
	return map[string]bool{
		"MESSAGES":        options.NumMessages,
		"UIDNEXT":         options.UIDNext,
		"UIDVALIDITY":     options.UIDValidity,
		"UNSEEN":          options.NumUnseen,
		"DELETED":         options.NumDeleted,
		"SIZE":            options.Size,
		"APPENDLIMIT":     options.AppendLimit,
		"DELETED-STORAGE": options.DeletedStorage,
		"HIGHESTMODSEQ":   options.HighestModSeq,
	}
}

func encodeFetchItems(options *imap.FetchOptions) string {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	enc := imapwire.NewEncoder(w, imapwire.ConnSideClient)
	writeFetchItems(enc, imapwire.NumKindSeq, options)
	w.Flush()
	return b.String()
}

func TestPatchFetchOrder(t *testing.T) {
	for mask := 0; mask < 1<<8; mask++ {
		o := &imap.FetchOptions{Flags: mask&1 != 0, InternalDate: mask&2 != 0, RFC822Size: mask&4 != 0, Envelope: mask&8 != 0, ModSeq: mask&16 != 0}
		if mask&32 != 0 {
			o.BodyStructure = &imap.FetchItemBodyStructure{Extended: mask&64 != 0}
		}
		first := encodeFetchItems(o)
		for range 20 {
			if again := encodeFetchItems(o); again != first {
				t.Fatalf("options %d: %q, then %q", mask, first, again)
			}
		}
		got := strings.Fields(strings.Trim(first, "()"))
		var want []string
		for k, req := range origFetchAtoms(o) {
			if req {
				want = append(want, k)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("options %d: %v, beta.8 asked for %v", mask, got, want)
		}
	}
}

func TestPatchStatusOrder(t *testing.T) {
	for mask := 0; mask < 1<<9; mask++ {
		o := &imap.StatusOptions{NumMessages: mask&1 != 0, UIDNext: mask&2 != 0, UIDValidity: mask&4 != 0, NumUnseen: mask&8 != 0,
			NumDeleted: mask&16 != 0, Size: mask&32 != 0, AppendLimit: mask&64 != 0, DeletedStorage: mask&128 != 0, HighestModSeq: mask&256 != 0}
		first := statusItems(o)
		for range 20 {
			if again := statusItems(o); !slices.Equal(again, first) {
				t.Fatalf("options %d: %v, then %v", mask, first, again)
			}
		}
		var want []string
		for k, req := range origStatusItems(o) {
			if req {
				want = append(want, k)
			}
		}
		got := slices.Clone(first)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("options %d: %v, beta.8 asked for %v", mask, got, want)
		}
	}
}
