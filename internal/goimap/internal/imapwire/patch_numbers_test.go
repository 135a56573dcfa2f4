package imapwire

// Tests of mailbench's numbers.patch (internal/goimap/PATCHES.md):
// Number, Number64 and ModSeq parse a buffered run of digits in place and
// must decode exactly as beta.8's, kept below verbatim (numberStr, whose
// own fast path runs.patch tests, then strconv).

import (
	"bufio"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

func origNumber(dec *Decoder, ptr *uint32) bool {
	s, ok := dec.numberStr()
	if !ok {
		return false
	}
	v64, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return false // can happen on overflow
	}
	*ptr = uint32(v64)
	return true
}

func origNumber64(dec *Decoder, ptr *int64) bool {
	s, ok := dec.numberStr()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return false // can happen on overflow
	}
	*ptr = v
	return true
}

func origModSeq(dec *Decoder, ptr *uint64) bool {
	s, ok := dec.numberStr()
	if !ok {
		return false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return false // can happen on overflow
	}
	*ptr = v
	return true
}

// decodeNumbers reads in with one of the three (op "32", "64", "modseq"),
// an SP and the same again, and returns everything observable.
func decodeNumbers(in, op string, bufSize int, oneByte bool, maxSize int64, orig bool) string {
	dec := testDecoder(in, ConnSideClient, bufSize, oneByte, maxSize)
	var out strings.Builder
	for range 2 {
		var (
			ok bool
			v  any
		)
		switch op {
		case "32":
			var n uint32
			if orig {
				ok = origNumber(dec, &n)
			} else {
				ok = dec.Number(&n)
			}
			v = n
		case "64":
			var n int64
			if orig {
				ok = origNumber64(dec, &n)
			} else {
				ok = dec.Number64(&n)
			}
			v = n
		default:
			var n uint64
			if orig {
				ok = origModSeq(dec, &n)
			} else {
				ok = dec.ModSeq(&n)
			}
			v = n
		}
		fmt.Fprintf(&out, "%v %v n=%d crlf=%v; ", ok, v, dec.readBytes, dec.crlf)
		dec.SP()
	}
	if dec.Err() != nil {
		out.WriteString("err=" + dec.Err().Error())
	}
	out.WriteString(" rest=" + unreadRest(dec))
	return out.String()
}

func checkNumbers(t *testing.T, in string, bufSize int, oneByte bool, maxSize int64) {
	t.Helper()
	for _, op := range []string{"32", "64", "modseq"} {
		want := decodeNumbers(in, op, bufSize, oneByte, maxSize, true)
		got := decodeNumbers(in, op, bufSize, oneByte, maxSize, false)
		if got != want {
			t.Fatalf("%s on %q bufio %d oneByte %v MaxSize %d:\n got  %s\n want %s", op, in, bufSize, oneByte, maxSize, got, want)
		}
	}
}

var numberInputs = []string{
	"", "0 ", "7 1", "00042)", "4294967295 ", "4294967296 ", "9223372036854775807 ", "9223372036854775808 ",
	"18446744073709551615 ", "18446744073709551616 ", "99999999999999999999999 1", "12a", "a12", " 12", "1\r\n",
}

func TestPatchNumbersMatchOriginal(t *testing.T) {
	for _, in := range numberInputs {
		for _, bs := range []int{16, 4096} {
			for _, ob := range []bool{false, true} {
				for ms := int64(0); ms < 30; ms++ {
					checkNumbers(t, in, bs, ob, ms)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(13))
	for i := 0; i < 20000; i++ {
		b := make([]byte, rng.Intn(30))
		for j := range b {
			if rng.Intn(8) == 0 {
				b[j] = " )x\r"[rng.Intn(4)]
			} else {
				b[j] = byte('0' + rng.Intn(10))
			}
		}
		checkNumbers(t, string(b), []int{16, 4096}[rng.Intn(2)], rng.Intn(3) == 0, int64(rng.Intn(32)))
	}
}

func FuzzPatchNumbers(f *testing.F) {
	for _, in := range numberInputs {
		f.Add(in, int64(0), false)
	}
	f.Fuzz(func(t *testing.T, in string, maxSize int64, oneByte bool) {
		checkNumbers(t, in, 16, oneByte, maxSize)
	})
}

// A number costs no allocation when it is buffered.
func TestPatchNumbersAllocs(t *testing.T) {
	r := strings.NewReader("")
	br := bufio.NewReaderSize(r, 4096)
	dec := NewDecoder(br, ConnSideClient)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset("123456 ")
		br.Reset(r)
		br.Peek(1) // buffered, as a response is by the time its numbers are read
		var n uint32
		if !dec.Number(&n) || n != 123456 {
			t.Fatal(n, dec.Err())
		}
	})
	if allocs > 0 {
		t.Errorf("%.0f allocations per number", allocs)
	}
}
