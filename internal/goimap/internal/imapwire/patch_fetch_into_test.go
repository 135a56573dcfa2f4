package imapwire

// Test for mailbench's fetch-into.patch: ExpectNStringAppend appends what
// ExpectNStringBytes returns to dst, leaves the decoder in the same state,
// and with room in dst reads a literal without allocating.
// (ExpectNStringBytes is ExpectNStringAppend(nil, max), which the
// literal-bytes differential test compares with beta.8.)

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestPatchExpectNStringAppend(t *testing.T) {
	inputs := []string{`NIL x`, `nil x`, `"" x`, `"abc" x`, `"toolong" x`, "{0}\r\n x", "{5}\r\nhello x", "{9}\r\ntoo long! x",
		"{5}\r\nhel", "{x}\r\n", `NILX x`, `( x`}
	for _, in := range inputs {
		for _, bufSize := range []int{16, 4096} {
			for _, dst := range [][]byte{nil, []byte("pre:"), make([]byte, 0, 64), append(make([]byte, 0, 64), "pre:"...)} {
				ref := testDecoder(in, ConnSideClient, bufSize, false, 0)
				wantB, wantLit, wantOK := ref.ExpectNStringBytes(5)
				dec := testDecoder(in, ConnSideClient, bufSize, false, 0)
				prefix := string(dst)
				gotB, gotLit, gotOK := dec.ExpectNStringAppend(dst, 5)
				name := fmt.Sprintf("%q, buffer %d, dst %q (cap %d)", in, bufSize, prefix, cap(dst))
				if gotOK != wantOK || (gotLit == nil) != (wantLit == nil) || fmt.Sprint(dec.Err()) != fmt.Sprint(ref.Err()) {
					t.Fatalf("%s: ok %v lit %v err %v, ExpectNStringBytes: ok %v lit %v err %v", name, gotOK, gotLit != nil, dec.Err(), wantOK, wantLit != nil, ref.Err())
				}
				if (gotB == nil) != (wantB == nil) {
					t.Fatalf("%s: bytes %q, ExpectNStringBytes %q", name, gotB, wantB)
				}
				if wantB != nil && string(gotB) != prefix+string(wantB) {
					t.Fatalf("%s: %q, want %q", name, gotB, prefix+string(wantB))
				}
				if gotLit != nil {
					var g, w bytes.Buffer
					g.ReadFrom(gotLit)
					w.ReadFrom(wantLit)
					if g.String() != w.String() {
						t.Fatalf("%s: literal %q, want %q", name, g.String(), w.String())
					}
				}
				if got, want := unreadRest(dec), unreadRest(ref); got != want {
					t.Fatalf("%s: rest %q, want %q", name, got, want)
				}
			}
		}
	}

	// Room in dst: no allocation.
	const in = "{5}\r\nhello"
	r := strings.NewReader(in)
	br := bufio.NewReaderSize(r, 4096)
	dec := NewDecoder(br, ConnSideClient)
	dst := make([]byte, 0, 16)
	allocs := testing.AllocsPerRun(50, func() {
		r.Reset(in)
		br.Reset(r)
		dec.err = nil
		if b, _, ok := dec.ExpectNStringAppend(dst[:0], 8); !ok || string(b) != "hello" {
			t.Fatalf("%q %v %v", b, ok, dec.Err())
		}
	})
	if allocs > 0 {
		t.Errorf("%.0f allocations to read a literal into room", allocs)
	}
}
