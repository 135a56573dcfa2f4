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
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
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
