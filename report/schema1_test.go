package report

import (
	"encoding/json"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestHistogramJSONNull: the zero Histogram is null both ways, and a
// histogram of another geometry is refused.
func TestHistogramJSONNull(t *testing.T) {
	b, err := json.Marshal(Histogram{})
	if err != nil || string(b) != "null" {
		t.Fatalf("Marshal(Histogram{}) = %s, %v; want null", b, err)
	}
	h := Histogram{Histogram: hdrhistogram.New(1, 10, 1)}
	if err := json.Unmarshal([]byte("null"), &h); err != nil || h.Histogram != nil {
		t.Errorf("Unmarshal(null) = %v, histogram %v; want none", err, h.Histogram)
	}
	enc, err := json.Marshal(Histogram{Histogram: hdrhistogram.New(1, 10, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(enc, &h); err == nil {
		t.Error("a histogram of another geometry was read")
	}
}
