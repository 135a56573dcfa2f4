package smtp

// Tests of the mailbench patch (PATCHES.md): the bulk dataReader and
// lineLimitReader must behave exactly as v0.25.1's byte-by-byte loops, which
// are kept below as origDataRead and origLineLimitRead.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"
)

// origDataRead is dataReader.Read of go-smtp v0.25.1, unchanged.
func origDataRead(r *dataReader, b []byte) (n int, err error) {
	if r.limited {
		if r.n <= 0 {
			return 0, ErrDataTooLarge
		}
		if int64(len(b)) > r.n {
			b = b[0:r.n]
		}
	}
	const (
		stateBeginLine = iota
		stateDot
		stateDotCR
		stateCR
		stateData
		stateEOF
	)
	for n < len(b) && r.state != stateEOF {
		var c byte
		c, err = r.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			break
		}
		switch r.state {
		case stateBeginLine:
			if c == '.' {
				r.state = stateDot
				continue
			}
			if c == '\r' {
				r.state = stateCR
				break
			}
			r.state = stateData
		case stateDot:
			if c == '\r' {
				r.state = stateDotCR
				continue
			}
			r.state = stateData
		case stateDotCR:
			if c == '\n' {
				r.state = stateEOF
				continue
			}
			r.state = stateData
		case stateCR:
			if c == '\n' {
				r.state = stateBeginLine
				break
			}
			r.state = stateData
		case stateData:
			if c == '\r' {
				r.state = stateCR
			}
		}
		b[n] = c
		n++
	}
	if err == nil && r.state == stateEOF {
		err = io.EOF
	}
	if r.limited {
		r.n -= int64(n)
	}
	return
}

// origLineLimitRead is lineLimitReader.Read of go-smtp v0.25.1, unchanged.
func origLineLimitRead(r *lineLimitReader, b []byte) (int, error) {
	if r.curLineLength > r.LineLimit && r.LineLimit > 0 {
		return 0, ErrTooLongLine
	}
	n, err := r.R.Read(b)
	if err != nil {
		return n, err
	}
	if r.LineLimit == 0 {
		return n, nil
	}
	for _, chr := range b[:n] {
		if chr == '\n' {
			r.curLineLength = 0
		}
		r.curLineLength++
		if r.curLineLength > r.LineLimit {
			return 0, ErrTooLongLine
		}
	}
	return n, nil
}

var trickyData = []string{
	"",
	".\r\n",
	"hello\r\n.\r\n",
	"hello\r\n.\r\nNEXT COMMAND\r\n",
	"..dot\r\n.\r\n",
	".x\r\n.\r\n",
	".\rX\r\n.\r\n",     // the '\r' after a leading dot is dropped
	".\r\r\n.\r\n",      // .CR followed by CR: no line start afterwards
	"a\r\r\n.\r\n.\r\n", // CR CR LF: the next line does not begin a line
	"bare\nlf\n.\nstill\r\n.\r\n",
	"bare\n.\r\n.\r\n",
	"\r\n.\r\n",
	"\r\n\r\n..\r\n.\r\n",
	"no end",
	"no end\r\n.",
	"no end\r\n.\r",
	"cr only\r",
	"\r\r\r\r\n.\r\n",
	strings.Repeat("x", 5000) + "\r\n.\r\n",
	strings.Repeat("line of text\r\n", 300) + ".\r\n",
	strings.Repeat(".dotted\r\n", 50) + "\r\n.\r\nRSET\r\n",
}

type readerOpts struct {
	bufSize  int // bufio size
	readSize int // caller's buffer
	oneByte  bool
	limit    int64
}

func allReaderOpts() []readerOpts {
	var o []readerOpts
	for _, bs := range []int{16, 4096} {
		for _, rs := range []int{1, 3, 7, 64, 32 * 1024} {
			for _, ob := range []bool{false, true} {
				for _, lim := range []int64{0, 1, 5, 100, 4999, 5000, 5001} {
					o = append(o, readerOpts{bs, rs, ob, lim})
				}
			}
		}
	}
	return o
}

type readResult struct {
	out  []byte
	err  error
	rest []byte
}

func readAllData(input string, o readerOpts, orig bool) readResult {
	var src io.Reader = strings.NewReader(input)
	if o.oneByte {
		src = iotest.OneByteReader(src)
	}
	br := bufio.NewReaderSize(src, o.bufSize)
	dr := &dataReader{r: br}
	if o.limit > 0 {
		dr.limited = true
		dr.n = o.limit
	}
	var out []byte
	b := make([]byte, o.readSize)
	var err error
	for i := 0; i < 1e6; i++ {
		var n int
		if orig {
			n, err = origDataRead(dr, b)
		} else {
			n, err = dr.Read(b)
		}
		out = append(out, b[:n]...)
		if err != nil {
			break
		}
	}
	rest, _ := io.ReadAll(br)
	return readResult{out, err, rest}
}

func checkDataEquiv(t *testing.T, input string, o readerOpts) {
	t.Helper()
	want := readAllData(input, o, true)
	got := readAllData(input, o, false)
	if !bytes.Equal(got.out, want.out) || got.err != want.err || !bytes.Equal(got.rest, want.rest) {
		t.Fatalf("input %q opts %+v:\n got  %q %v rest %q\n want %q %v rest %q",
			input, o, got.out, got.err, got.rest, want.out, want.err, want.rest)
	}
}

func TestPatchDataReaderMatchesOriginal(t *testing.T) {
	for _, in := range trickyData {
		for _, o := range allReaderOpts() {
			checkDataEquiv(t, in, o)
		}
	}
}

// Each Read returns exactly what the original returned for the same call,
// not only the same stream.
func TestPatchDataReaderSameCalls(t *testing.T) {
	for _, in := range trickyData {
		for _, rs := range []int{1, 5, 100, 32 * 1024} {
			a := &dataReader{r: bufio.NewReaderSize(strings.NewReader(in), 16)}
			b := &dataReader{r: bufio.NewReaderSize(strings.NewReader(in), 16)}
			ba, bb := make([]byte, rs), make([]byte, rs)
			for i := 0; ; i++ {
				na, ea := origDataRead(a, ba)
				nb, eb := b.Read(bb)
				if na != nb || ea != eb || !bytes.Equal(ba[:na], bb[:nb]) {
					t.Fatalf("input %q read size %d call %d: got %d %v, want %d %v", in, rs, i, nb, eb, na, ea)
				}
				if ea != nil {
					break
				}
			}
		}
	}
}

func TestPatchDataReaderRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte(".\r\nab")
	opts := allReaderOpts()
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.Intn(80))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		checkDataEquiv(t, string(b), opts[rng.Intn(len(opts))])
	}
}

func FuzzPatchDataReader(f *testing.F) {
	for _, in := range trickyData {
		f.Add(in, uint16(7), false, int64(0))
	}
	f.Fuzz(func(t *testing.T, in string, rs uint16, oneByte bool, limit int64) {
		if rs == 0 {
			rs = 1
		}
		checkDataEquiv(t, in, readerOpts{16, int(rs), oneByte, limit})
	})
}

type llResult struct {
	ns   []int
	errs []error
	out  []byte
}

// readLineLimited reads input through a lineLimitReader in chunks of the
// given sizes; limits[i] is set as LineLimit before call i (BDAT changes it
// between reads).
func readLineLimited(input string, chunks []int, limits []int, orig bool) llResult {
	r := &lineLimitReader{R: strings.NewReader(input)}
	var res llResult
	for i := 0; i < len(chunks); i++ {
		r.LineLimit = limits[i%len(limits)]
		b := make([]byte, chunks[i])
		var n int
		var err error
		if orig {
			n, err = origLineLimitRead(r, b)
		} else {
			n, err = r.Read(b)
		}
		res.ns = append(res.ns, n)
		res.errs = append(res.errs, err)
		res.out = append(res.out, b[:n]...)
		if err != nil && !errors.Is(err, ErrTooLongLine) {
			break
		}
	}
	return res
}

func checkLineLimitEquiv(t *testing.T, input string, chunks, limits []int) {
	t.Helper()
	want := readLineLimited(input, chunks, limits, true)
	got := readLineLimited(input, chunks, limits, false)
	if len(got.ns) != len(want.ns) || !bytes.Equal(got.out, want.out) {
		t.Fatalf("input %q chunks %v limits %v: got %v %v, want %v %v", input, chunks, limits, got.ns, got.errs, want.ns, want.errs)
	}
	for i := range got.ns {
		if got.ns[i] != want.ns[i] || got.errs[i] != want.errs[i] {
			t.Fatalf("input %q chunks %v limits %v call %d: got %d %v, want %d %v", input, chunks, limits, i, got.ns[i], got.errs[i], want.ns[i], want.errs[i])
		}
	}
}

func TestPatchLineLimitReaderMatchesOriginal(t *testing.T) {
	inputs := []string{
		"", "\n", "\n\n\n", "abc", "abc\n", "abcd\nab\n", "abcde\n", "\nabcd", "ab\r\ncd\r\n",
		strings.Repeat("x", 2000) + "\r\n", strings.Repeat("x", 1999) + "\r\n", strings.Repeat("x", 1998) + "\r\n",
		strings.Repeat("y", 3000), strings.Repeat("a\n", 100),
	}
	limits := [][]int{{1}, {2}, {3}, {4}, {5}, {2000}, {0}, {-1}, {4, 0, 4}, {0, 3}}
	chunkSets := [][]int{{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {3, 3, 3, 3, 3, 3}, {4096, 4096}, {2, 0, 5, 4096, 4096}}
	for _, in := range inputs {
		for _, l := range limits {
			for _, c := range chunkSets {
				checkLineLimitEquiv(t, in, c, l)
			}
		}
	}
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.Intn(40))
		for j := range b {
			b[j] = "\nab"[rng.Intn(3)]
		}
		chunks := make([]int, 1+rng.Intn(8))
		for j := range chunks {
			chunks[j] = rng.Intn(12)
		}
		lim := []int{rng.Intn(8) - 1}
		if rng.Intn(4) == 0 {
			lim = append(lim, 0)
		}
		checkLineLimitEquiv(t, string(b), chunks, lim)
	}
}

func BenchmarkPatchDataReader(b *testing.B) {
	msg := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod\r\n", 70) + ".\r\n"
	buf := make([]byte, 32*1024)
	for _, v := range []struct {
		name string
		orig bool
	}{{"orig", true}, {"patched", false}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			sr := strings.NewReader(msg)
			br := bufio.NewReaderSize(sr, 4096)
			for i := 0; i < b.N; i++ {
				sr.Reset(msg)
				br.Reset(&lineLimitReader{R: sr, LineLimit: 2000})
				dr := &dataReader{r: br}
				for {
					var err error
					if v.orig {
						_, err = origDataRead(dr, buf)
					} else {
						_, err = dr.Read(buf)
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
