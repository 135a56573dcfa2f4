package smtp

// Test of mailbench's as-is.patch: DataCommand.WriteAsIs sends what Write
// sends, for data its caller vouches for, whatever was written before it.

import (
	"bufio"
	"bytes"
	"math/rand"
	"net/textproto"
	"strings"
	"testing"
)

// asIsClean is a random chunk as WriteAsIs's caller guarantees it: lines
// ending in CRLF, none beginning with ".", ending at a line end.
func asIsClean(r *rand.Rand) []byte {
	var b []byte
	for range r.Intn(5) {
		n := r.Intn(12)
		for i := range n {
			c := "ab.x \t\x80"[r.Intn(7)]
			if i == 0 && c == '.' {
				c = 'y'
			}
			b = append(b, c)
		}
		b = append(b, '\r', '\n')
	}
	return b
}

// anyChunk is any bytes, the dot-stuffer's hard cases among them.
func anyChunk(r *rand.Rand) []byte {
	b := make([]byte, r.Intn(10))
	for i := range b {
		b[i] = "a.\r\n"[r.Intn(4)]
	}
	return b
}

func TestPatchWriteAsIsSameAsWrite(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for range 20000 {
		var a, b bytes.Buffer
		wa := newDotWriter(textproto.NewWriter(bufio.NewWriterSize(&a, 16)))
		wb := newDotWriter(textproto.NewWriter(bufio.NewWriterSize(&b, 16)))
		var script []string
		for range r.Intn(6) {
			var chunk []byte
			asIs := r.Intn(2) == 0
			if asIs {
				chunk = asIsClean(r)
			} else {
				chunk = anyChunk(r)
			}
			script = append(script, string(chunk))
			na, ea := wa.Write(chunk)
			var nb int
			var eb error
			if asIs {
				nb, eb = wb.writeAsIs(chunk)
			} else {
				nb, eb = wb.Write(chunk)
			}
			if na != nb || ea != nil || eb != nil {
				t.Fatalf("%q: Write %d, %v; writeAsIs %d, %v", script, na, ea, nb, eb)
			}
		}
		wa.Close()
		wb.Close()
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("writes %q:\nWrite     %q\nWriteAsIs %q", script, a.Bytes(), b.Bytes())
		}
	}
}

// TestPatchWriteAsIsOnTheWire: a message sent with WriteAsIs for its body
// puts the same bytes on the wire as one sent with Write.
func TestPatchWriteAsIsOnTheWire(t *testing.T) {
	header := []byte("Subject: x\r\n\r\n")
	body := []byte(strings.Repeat("a line of the body\r\n", 100))
	_, plain := sendScripted(t, append(header, body...), 0)
	_, asIs := sendScriptedWith(t, body, 0, func(w *DataCommand, b []byte) (int, error) {
		if _, err := w.Write(header); err != nil {
			return 0, err
		}
		return w.WriteAsIs(b)
	})
	if !bytes.Equal(plain, asIs) {
		t.Errorf("on the wire:\nWrite     %q\nWriteAsIs %q", plain, asIs)
	}
}
