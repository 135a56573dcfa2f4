package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestSchema1Reports reads reports of schema version 1 that real runs
// wrote (testdata/schema1, kept as they were written: a run with [clients]
// and a delivery check, a shard of a run with an external sink, a run that
// could not run). Written back, they hold the same document: the same keys
// in the same order and the same values, except derived figures, which may
// differ in the last digits (they are computed from the microseconds the
// file holds, and these files' writer computed them from nanoseconds). Written back again,
// they are the same bytes, and their text is as it was (the .txt golden
// files beside them). Together they hold every top-level section of the
// schema.
func TestSchema1Reports(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "schema1", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema 1 reports: %v", err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ReadJSON(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("ReadJSON() = %v", err)
			}
			var out bytes.Buffer
			if err := WriteJSON(&out, r); err != nil {
				t.Fatal(err)
			}
			if !sameDocument(out.Bytes(), data) {
				t.Errorf("WriteJSON(ReadJSON(%s)) differs from the file:\n%s", file, firstDifference(out.String(), string(data)))
			}
			again, err := ReadJSON(bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatalf("ReadJSON(WriteJSON()) = %v", err)
			}
			var out2 bytes.Buffer
			if err := WriteJSON(&out2, again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out2.Bytes(), out.Bytes()) {
				t.Errorf("a report read back does not write the same bytes:\n%s", firstDifference(out2.String(), out.String()))
			}
			var text bytes.Buffer
			if err := WriteText(&text, r); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("schema1", strings.TrimSuffix(filepath.Base(file), ".json")+".txt.golden"), text.Bytes())
			// At 80 columns every line fits.
			var narrow bytes.Buffer
			if err := WriteTextWidth(&narrow, r, 80); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("schema1", strings.TrimSuffix(filepath.Base(file), ".json")+".80.txt.golden"), narrow.Bytes())
			for _, line := range strings.Split(narrow.String(), "\n") {
				if n := len([]rune(line)); n > 80 {
					t.Errorf("at 80 columns, a line of %d: %q", n, line)
				}
			}
			for _, key := range topLevelKeys(t, data) {
				seen[key] = true
			}
		})
	}
	for _, key := range []string{"shard", "remote_pending", "clients", "server_clock", "delivery_timing", "could_not_run",
		"timeline", "connect", "delivery", "delivery_checks", "generator", "warnings"} {
		if !seen[key] {
			t.Errorf("no schema 1 report has %q", key)
		}
	}
}

// firstDifference shows the lines around the first line where got and
// want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n got  " + gl + "\n want " + wl
		}
	}
	return "(no line differs)"
}

// topLevelKeys are the top-level keys of a JSON report whose value is not
// empty (null, "", false, 0, [] or {}).
func topLevelKeys(t *testing.T, data []byte) []string {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, v := range doc {
		switch string(v) {
		case "null", `""`, "false", "0", "[]", "{}":
		default:
			keys = append(keys, k)
		}
	}
	return keys
}

// sameDocument reports whether two JSON documents have the same lines, but
// for numbers that agree to five significant digits.
func sameDocument(a, b []byte) bool {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if la[i] == lb[i] {
			continue
		}
		ka, va, oka := strings.Cut(la[i], ": ")
		kb, vb, okb := strings.Cut(lb[i], ": ")
		if !oka || !okb || ka != kb {
			return false
		}
		fa, erra := strconv.ParseFloat(strings.TrimSuffix(va, ","), 64)
		fb, errb := strconv.ParseFloat(strings.TrimSuffix(vb, ","), 64)
		if erra != nil || errb != nil || math.Abs(fa-fb) > 1e-5*math.Max(math.Abs(fa), math.Abs(fb)) {
			return false
		}
	}
	return true
}

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
