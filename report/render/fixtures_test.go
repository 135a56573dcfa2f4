package render

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/internal/testing/timelinetest"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// fixtureFunctions are the functions the test runs time: the SPEC table
// and the two delivery times, as a run without [clients] has them.
var fixtureFunctions = append(append([]measure.Function(nil), measure.SPECFunctions...), measure.DeliveryLocal, measure.DeliveryRemote)

// The timelines of these tests (internal/testing/timelinetest).
var (
	tlStart        = timelinetest.Start
	fnPoint        = timelinetest.FunctionPoint
	mkPoint        = timelinetest.Point
	sampleTimeline = timelinetest.Sample
)

func roundTrip(t *testing.T, r *report.Run) *report.Run {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	got, err := report.ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func serverFixture() *metrics.ServerReport {
	return &metrics.ServerReport{IntervalSeconds: 10, Cores: 2,
		Sources: []metrics.ServerSource{{Name: "host", Kind: "host", Samples: 60}, {Name: "queue", Kind: "command", Samples: 60, Failures: 3, LastError: "no answer within 2s ([server] timeout)"}},
		Figures: []metrics.ServerFigure{
			{Name: "host.cpu_percent", Unit: "%", Mean: 81.5, Peak: 97.2, Samples: 60},
			{Name: "host.disk_util_percent", Unit: "%", Mean: 22, Peak: 40, Samples: 60},
			{Name: "dovecot.cpu_cores", Unit: "cores", Mean: 1.1, Peak: 1.6, Samples: 60},
			{Name: "dovecot.rss_bytes", Unit: "bytes", Mean: 210 << 20, Peak: 230 << 20, Samples: 60},
			{Name: "mailbench.cpu_cores", Unit: "cores", Mean: 0.4, Peak: 0.5, Samples: 60},
		}}
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

// compliantRun and failingRun are the model's fixtures as its golden JSON
// reports keep them (report's tests build them and write those files;
// the JSON round trip is lossless, report's TestJSONRoundTrip): a full run
// where every row passes, and a partial one that fails.
func compliantRun() *report.Run { return modelFixture("compliant.json.golden") }
func failingRun() *report.Run   { return modelFixture("partial_failing.json.golden") }

func modelFixture(name string) *report.Run {
	f, err := os.Open(filepath.Join("..", "testdata", name))
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		panic(err)
	}
	return r
}
