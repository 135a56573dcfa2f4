package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/mailbench/mailbench/measure"
)

// MaxEncodedHistogram bounds the length of an encoded histogram that
// DecodeHistogram accepts. A full histogram of mailbench's geometry encodes
// to well under this.
const MaxEncodedHistogram = 1 << 20

// EncodeHistogram returns h in the standard HdrHistogram V2 compressed
// encoding, base64 ("HISTF…"), which Java and C HdrHistogram read too.
//
// The bytes are those of hdrhistogram-go's
// h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
// (TestEncodeHistogramMatchesLibrary compares them), written with a zlib
// writer and buffers from a pool (the timeline keeps an encoder of its
// own): the library builds a new zlib writer at BestCompression for every
// call, about 800 KB and 260 µs per histogram (120 µs and the 184 KiB
// counts copy of Export here, BenchmarkEncodeHistogram), and the
// timeline encodes one per function and interval: at 5,000,000
// sessions/hour, 14 MB of garbage a second.
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	e := encoders.Get().(*histogramEncoder)
	defer encoders.Put(e)
	return e.encode(h)
}

// V2 encoding constants (hdrhistogram-go's hdr_encoding.go, HdrHistogram's
// V2 format): the cookies of the inner (uncompressed) and outer
// (compressed) encodings, both with the 0x10 word-size bits.
const (
	v2EncodingCookie           = hdrhistogram.V2EncodingCookieBase | 0x10
	v2CompressedEncodingCookie = hdrhistogram.V2CompressedEncodingCookieBase | 0x10
	v2HeaderSize               = 40
)

// histogramEncoder holds what one encoding needs, reused through encoders.
type histogramEncoder struct {
	payload    []byte       // the inner encoding: 40-byte header, then the counts
	compressed bytes.Buffer // zlib of payload
	zw         *zlib.Writer
	out        []byte // outer header + compressed, before base64
}

var encoders = sync.Pool{New: func() any { return newHistogramEncoder() }}

// newHistogramEncoder returns an encoder; one encodes one histogram at a
// time.
func newHistogramEncoder() *histogramEncoder {
	e := &histogramEncoder{}
	e.zw, _ = zlib.NewWriterLevel(&e.compressed, zlib.BestCompression) // a valid level: no error
	// zlib allocates its compressor (the ~800 KB) at the first write:
	// now, so that an encoder made ahead of time (the timeline's) has it.
	e.zw.Close()
	return e
}

func (e *histogramEncoder) encode(h *hdrhistogram.Histogram) (string, error) {
	snap := h.Export()
	counts := snap.Counts
	// The counts up to the one holding the largest value (at least one:
	// an empty histogram encodes one zero count), as the library writes.
	limit := 1
	for i := len(counts) - 1; i > 0; i-- {
		if counts[i] != 0 {
			limit = i + 1
			break
		}
	}
	ratio := snap.IntegerToDoubleConversionRatio
	if ratio == 0 {
		ratio = 1
	}
	p := append(e.payload[:0], make([]byte, v2HeaderSize)...)
	for i := 0; i < limit; {
		c := counts[i]
		i++
		if c == 0 { // a run of zeros is written as its negated length
			zeros := int64(1)
			for i < limit && counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				c = -zeros
			}
		}
		p = appendZigZag(p, c)
	}
	be := binary.BigEndian
	be.PutUint32(p[0:], uint32(v2EncodingCookie))
	be.PutUint32(p[4:], uint32(len(p)-v2HeaderSize))
	be.PutUint32(p[8:], 0) // normalizing index offset: Go's counts are never rotated
	be.PutUint32(p[12:], uint32(snap.SignificantFigures))
	be.PutUint64(p[16:], uint64(snap.LowestTrackableValue))
	be.PutUint64(p[24:], uint64(snap.HighestTrackableValue))
	be.PutUint64(p[32:], math.Float64bits(ratio))
	e.payload = p

	e.compressed.Reset()
	e.zw.Reset(&e.compressed)
	if _, err := e.zw.Write(p); err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	if err := e.zw.Close(); err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	out := be.AppendUint32(e.out[:0], uint32(v2CompressedEncodingCookie))
	out = be.AppendUint32(out, uint32(e.compressed.Len()))
	out = append(out, e.compressed.Bytes()...)
	e.out = out
	return base64.StdEncoding.EncodeToString(out), nil
}

// appendZigZag appends v as HdrHistogram's ZigZag LEB128-64b9B: seven bits
// per byte, low first, a continuation bit on all but the last, and a
// ninth byte, when needed, that holds the top eight bits whole.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64((v << 1) ^ (v >> 63))
	for range 8 {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(b, byte(u))
}

// DecodeHistogram decodes a histogram written by EncodeHistogram. It is meant
// for untrusted input: it rejects, before allocating any counts, encodings
// longer than MaxEncodedHistogram and histograms whose geometry is not
// mailbench's (1 µs..1 h, 3 digits), so the result can always be merged
// exactly.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	if len(s) > MaxEncodedHistogram {
		return nil, fmt.Errorf("decode histogram: %d bytes, more than %d", len(s), MaxEncodedHistogram)
	}
	if err := checkEncodedGeometry(s); err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	if !sameGeometry(h) {
		return nil, errors.New("decode histogram: geometry is not 1 µs..1 h at 3 digits")
	}
	return h, nil
}

// checkEncodedGeometry reads only the 40-byte inner header of a V2
// compressed histogram and checks its geometry.
func checkEncodedGeometry(s string) error {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	if len(raw) < 8 {
		return errors.New("too short")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return err
	}
	defer z.Close()
	var hdr [40]byte
	if _, err := io.ReadFull(z, hdr[:]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	digits := int32(binary.BigEndian.Uint32(hdr[12:16]))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:24]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:32]))
	if int64(digits) != HistogramDigits || lowest != HistogramLowest || highest != HistogramHighest {
		return fmt.Errorf("geometry %d..%d at %d digits, want %d..%d at %d", lowest, highest, digits,
			HistogramLowest, HistogramHighest, HistogramDigits)
	}
	return nil
}

// jsonFunctionStats is FunctionStats as a report holds it: the limit in
// whole microseconds, the histogram encoded (EncodeHistogram).
type jsonFunctionStats struct {
	Function    measure.Function             `json:"function"`
	LimitUS     int64                        `json:"limit_us"`
	Operations  int64                        `json:"operations"`
	WithinLimit int64                        `json:"within_limit"`
	Errors      map[measure.ErrorClass]int64 `json:"errors"`
	Cancelled   int64                        `json:"cancelled,omitempty"`
	Histogram   string                       `json:"histogram"`
}

// MarshalJSON writes s as a report's "functions" entry; a nil histogram is
// written as an empty one.
func (s *FunctionStats) MarshalJSON() ([]byte, error) {
	h := s.Histogram
	if h == nil {
		h = NewHistogram()
	}
	enc, err := EncodeHistogram(h)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s.Function, err)
	}
	errs := s.Errors
	if errs == nil {
		errs = map[measure.ErrorClass]int64{}
	}
	return json.Marshal(jsonFunctionStats{Function: s.Function, LimitUS: int64(s.Limit / time.Microsecond),
		Operations: s.Operations, WithinLimit: s.WithinLimit, Errors: errs, Cancelled: s.Cancelled, Histogram: enc})
}

// UnmarshalJSON reads what MarshalJSON wrote and decodes the histogram (of
// mailbench's geometry only). It does not Check the counts.
func (s *FunctionStats) UnmarshalJSON(b []byte) error {
	var j jsonFunctionStats
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	h, err := DecodeHistogram(j.Histogram)
	if err != nil {
		return fmt.Errorf("%q: %w", j.Function, err)
	}
	*s = FunctionStats{Function: j.Function, Limit: time.Duration(j.LimitUS) * time.Microsecond, Operations: j.Operations,
		WithinLimit: j.WithinLimit, Errors: make(map[measure.ErrorClass]int64, len(j.Errors)), Histogram: h, Cancelled: j.Cancelled}
	for k, v := range j.Errors {
		s.Errors[k] = v
	}
	return nil
}
