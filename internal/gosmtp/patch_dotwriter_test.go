package smtp

// Test of mailbench's dot-writer.patch: dotWriter must write exactly what
// net/textproto's Writer.DotWriter writes, for any data cut into any
// writes, including what Close adds.

import (
	"bufio"
	"bytes"
	"math/rand"
	"net/textproto"
	"testing"
)

func dotOutputs(data []byte, cuts []int) (want, got []byte) {
	var a, b bytes.Buffer
	ta := textproto.NewWriter(bufio.NewWriterSize(&a, 64))
	tb := textproto.NewWriter(bufio.NewWriterSize(&b, 64))
	wa := ta.DotWriter()
	wb := newDotWriter(tb)
	prev := 0
	for _, c := range append(cuts, len(data)) {
		if c < prev || c > len(data) {
			continue
		}
		na, ea := wa.Write(data[prev:c])
		nb, eb := wb.Write(data[prev:c])
		if na != nb || (ea == nil) != (eb == nil) {
			return []byte("write result differs"), nil
		}
		prev = c
	}
	wa.Close()
	wb.Close()
	return a.Bytes(), b.Bytes()
}

func TestPatchDotWriterSame(t *testing.T) {
	cases := []string{
		"", ".", "..", "a", "a\r\n", "a\n", ".a\r\n.b\n.", "\r", "\r\r\n", "\n\n.\n", "line\r\n.\r\n",
		"Subject: x\r\n\r\nbody\r\n", "a\rb\r\n.c", "no end", ".\r\n", "\r\n.", "x\r\r.\r\n",
	}
	for _, c := range cases {
		for cut := 0; cut <= len(c); cut++ {
			want, got := dotOutputs([]byte(c), []int{cut})
			if !bytes.Equal(want, got) {
				t.Fatalf("%q cut at %d: got %q, want %q", c, cut, got, want)
			}
		}
	}
	rng := rand.New(rand.NewSource(9))
	const alphabet = ".\r\nab"
	for i := 0; i < 50000; i++ {
		data := make([]byte, rng.Intn(300))
		for j := range data {
			if rng.Intn(4) == 0 {
				data[j] = alphabet[rng.Intn(len(alphabet))]
			} else {
				data[j] = 'x'
			}
		}
		var cuts []int
		for k := rng.Intn(5); k > 0; k-- {
			cuts = append(cuts, rng.Intn(len(data)+1))
		}
		want, got := dotOutputs(data, cuts)
		if !bytes.Equal(want, got) {
			t.Fatalf("%q cut at %v: got %q, want %q", data, cuts, got, want)
		}
	}
}

func FuzzPatchDotWriter(f *testing.F) {
	f.Add([]byte(".a\r\n.b\n."), 3)
	f.Add([]byte("Subject: x\r\n\r\nbody\r\n"), 0)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		if cut < 0 {
			cut = -cut
		}
		want, got := dotOutputs(data, []int{cut % (len(data) + 1)})
		if !bytes.Equal(want, got) {
			t.Fatalf("%q cut at %d: got %q, want %q", data, cut, got, want)
		}
	})
}
