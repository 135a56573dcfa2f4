package render

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

// libraryPlaceholder stands in for the chart library in golden files.
const libraryPlaceholder = "/* chart library */"

// htmlFixtureRun is the compliant run with everything the HTML page can
// show: a 10-minute timeline of 10 s intervals with every function's p95,
// a connect breakdown, delivery accounting, and user input that needs
// escaping.
func htmlFixtureRun() *report.Run {
	r := compliantRun()
	r.Config = "configs/a&b.toml"
	r.Warnings = []string{`config name "<script>alert(1)</script>" & more`, "TLS certificate verification disabled for IMAP"}
	for i := range 60 {
		x := float64(i)
		wave := 1 + 0.35*math.Sin(x/6) + 0.1*math.Sin(x*1.7)
		var fps []metrics.FunctionPoint
		for k, f := range fixtureFunctions {
			base := float64(5 + 13*k)
			if i > 35 && i < 42 { // a slow patch
				base *= 3
			}
			top := time.Duration(base*wave*1000/0.95) * time.Microsecond
			if metrics.IsDelivery(f) { // seconds, not milliseconds
				top = time.Duration(float64(k-13)*wave*1e6) * time.Microsecond
			}
			errs := int64(0)
			if k == 0 {
				errs = int64(i%17) / 8
			}
			fps = append(fps, fnPoint(f, int64(170*wave)/int64(len(fixtureFunctions))+1, errs, top))
		}
		r.Timeline = append(r.Timeline, mkPoint(t0.Add(time.Minute+time.Duration(i)*10*time.Second), 10*time.Second,
			int64(30+5*math.Sin(x/4)), fps...))
	}
	r.Delivery = &delivery.Reconciliation{Sent: 401, Accepted: 400, Rejected: 1, AcceptedBytes: 3355443,
		LocalDeliveries: 420, RemoteDeliveries: 60, DeliveredLocal: 420, RelayedRemote: 60}
	r.DeliveryChecks = &report.CheckerSummary{Checks: 120, Commands: 480}
	part := func(n, p50, p95 int64) metrics.PartStats {
		return metrics.PartStats{Count: n, P50US: p50, P95US: p95, MaxUS: 3 * p95}
	}
	r.Connect = &metrics.ConnectSnapshot{Functions: []metrics.FunctionBreakdown{
		{Function: measure.IMAPConnect, Connects: 611, Handshakes: 611, Resumed: 400,
			TCP: part(611, 210, 480), TLS: part(611, 2900, 6100), Greeting: part(611, 350, 900), Auth: part(611, 4100, 9800)},
		{Function: measure.SMTPConnect, Connects: 500, Handshakes: 500, Resumed: 0,
			TCP: part(500, 190, 420), TLS: part(500, 3100, 6400), Greeting: part(500, 900, 2100), Auth: part(500, 2500, 5600)},
	}}
	return r
}

func renderHTML(t *testing.T, runs []*report.Run, opts HTMLOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := writeHTML(&b, runs, opts, libraryPlaceholder); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readFixture reads the JSON report at path: this package's fixtures, or
// the model's golden JSON reports (../testdata), which render as they are.
func readFixture(t *testing.T, path string) *report.Run {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHTMLFixtureJSON keeps testdata/html_full.json.golden, the JSON report
// the HTML golden files are rendered from (and a file to try
// `mailbench report testdata/html_full.json.golden --html x.html` on).
func TestHTMLFixtureJSON(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteJSON(&b, htmlFixtureRun()); err != nil {
		t.Fatal(err)
	}
	golden(t, "html_full.json.golden", b.Bytes())
}

func TestWriteHTMLGolden(t *testing.T) {
	full := readFixture(t, filepath.Join("testdata", "html_full.json.golden"))
	failing := readFixture(t, filepath.Join("..", "testdata", "partial_failing.json.golden"))
	for _, tt := range []struct {
		name string
		runs []*report.Run
		opts HTMLOptions
	}{
		{"html_full.html.golden", []*report.Run{full}, HTMLOptions{}},
		{"html_partial_failing.html.golden", []*report.Run{failing}, HTMLOptions{}},
		{"html_compare.html.golden", []*report.Run{full, failing}, HTMLOptions{Labels: []string{"dovecot-2.3", ""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := renderHTML(t, tt.runs, tt.opts)
			golden(t, tt.name, got)
			if again := renderHTML(t, tt.runs, tt.opts); !bytes.Equal(got, again) {
				t.Error("two renderings of the same runs differ")
			}
		})
	}
}

// The page rendered from a JSON report is the page of the run itself:
// `mailbench report a.json --html a.html` gives what `run --html` gave.
func TestWriteHTMLFromJSONIsTheSame(t *testing.T) {
	r := htmlFixtureRun()
	var js bytes.Buffer
	if err := report.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := renderHTML(t, []*report.Run{r}, HTMLOptions{}), renderHTML(t, []*report.Run{back}, HTMLOptions{}); !bytes.Equal(a, b) {
		t.Error("the page of the run and the page of its JSON report differ")
	}
}

var (
	reCanvas  = regexp.MustCompile(`<canvas id="([^"]+)"`)
	reRow     = regexp.MustCompile(`<tr class="row"><td>([^<]*)</td>`)
	reCharts  = regexp.MustCompile(`<body data-charts="(\d+)">`)
	reOutside = regexp.MustCompile(`(?i)https?://|\bsrc\s*=|\bhref\s*=|url\(|@import`)
)

func TestWriteHTMLStructure(t *testing.T) {
	r := readFixture(t, filepath.Join("testdata", "html_full.json.golden"))
	page := string(renderHTML(t, []*report.Run{r}, HTMLOptions{}))

	var rows []string
	for _, m := range reRow.FindAllStringSubmatch(page, -1) {
		rows = append(rows, m[1])
	}
	if len(rows) != len(r.Table.Rows) {
		t.Fatalf("%d compliance rows, want %d", len(rows), len(r.Table.Rows))
	}
	for i, row := range r.Table.Rows {
		if rows[i] != string(row.Function) {
			t.Errorf("row %d is %q, want %q", i, rows[i], row.Function)
		}
	}
	var canvases []string
	for _, m := range reCanvas.FindAllStringSubmatch(page, -1) {
		canvases = append(canvases, m[1])
	}
	want := []string{"run-timeline-p95", "run-timeline-delivery", "run-timeline-load", "run-percentiles", "run-session-types", "run-delivery", "run-connect"}
	if strings.Join(canvases, " ") != strings.Join(want, " ") {
		t.Errorf("canvases %q, want %q", canvases, want)
	}
	if m := reCharts.FindStringSubmatch(page); m == nil || m[1] != "7" {
		t.Errorf("body data-charts: %q, want 7", m)
	}
	checkChartsReadFirst(t, page)
	for _, s := range []string{"<h3>Is the run valid? The generator&#39;s health and the server&#39;s clock</h3>", "Session start lateness", "<h3>Over time</h3>"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	for _, s := range []string{
		`<span class="verdict ok">COMPLIANT</span>`,
		`<tr class="errorrate"><td>Error Rate</td>`,
		`<td>configs/a&amp;b.toml</td>`,
		`<li>config name &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34; &amp; more</li>`,
		`<script type="application/json" id="mb-data">{"charts":[`,
		`Messages sent          401 (accepted 400, rejected 1)`,
		`<td>IMAP Connect</td><td>611</td><td>0.21 / 0.48</td>`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("a warning was not escaped")
	}
	// Nothing is loaded from elsewhere: no URL, no src/href, no CSS import.
	if m := reOutside.FindAllString(page, -1); m != nil {
		t.Errorf("page refers outside itself: %q", m)
	}

	// With the real library: the same holds outside the library's own
	// licence comments, and the library is inline, whole.
	var b bytes.Buffer
	if err := WriteHTML(&b, []*report.Run{r}, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	full := b.String()
	if !strings.Contains(full, chartLibrarySource) || !strings.Contains(chartLibrarySource, "Chart.js v4.6.1") {
		t.Fatal("the page does not embed the chart library")
	}
	if strings.Contains(full, "sourceMappingURL") {
		t.Error("the page refers to a source map")
	}
	rest := strings.Replace(full, chartLibrarySource, "", 1)
	if m := reOutside.FindAllString(rest, -1); m != nil {
		t.Errorf("page refers outside itself: %q", m)
	}
	for _, m := range regexp.MustCompile(`https?://[^\s"']*`).FindAllString(chartLibrarySource, -1) {
		if m != "https://www.chartjs.org" && m != "https://github.com/kurkle/color#readme" {
			t.Errorf("the library holds an unexpected URL %q (only its licence comments' are known)", m)
		}
	}
}

func TestWriteHTMLCompareStructure(t *testing.T) {
	full := readFixture(t, filepath.Join("testdata", "html_full.json.golden"))
	failing := readFixture(t, filepath.Join("..", "testdata", "partial_failing.json.golden"))
	page := string(renderHTML(t, []*report.Run{full, failing}, HTMLOptions{Labels: []string{"a<b", ""}, Title: "releases"}))
	for _, s := range []string{
		"<title>releases</title>",
		`<th>a&lt;b</th><th>quick</th>`,
		`<canvas id="compare-p95"`, `<canvas id="compare-rate"`,
		`<details class="run" id="run1" open>`, `<details class="run" id="run2" open>`,
		`<canvas id="run1-timeline-p95"`, `<canvas id="run2-percentiles"`,
		`<td class="partial">PARTIAL</td>`,
		`<li>quick: partial (interrupted by SIGINT); failing: IMAP EXPUNGE, IMAP LSUB_NULL_WILDCARD, Error Rate</li>`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	// One canvas per chart described in the data.
	canvases := len(reCanvas.FindAllString(page, -1))
	if m := reCharts.FindStringSubmatch(page); m == nil || m[1] != strconv.Itoa(canvases) {
		t.Errorf("data-charts %q, %d canvases", m, canvases)
	}
	if strings.Count(page, `<tr class="row">`) != len(full.Table.Rows)+len(failing.Table.Rows) {
		t.Error("not every run's compliance table is on the page")
	}
}

func TestWriteHTMLRejects(t *testing.T) {
	for _, tt := range []struct {
		name string
		runs []*report.Run
		opts HTMLOptions
		want string
	}{
		{"no runs", nil, HTMLOptions{}, "no runs"},
		{"labels mismatch", []*report.Run{compliantRun()}, HTMLOptions{Labels: []string{"a", "b"}}, "2 labels for 1 runs"},
		{"nil run", []*report.Run{compliantRun(), nil}, HTMLOptions{}, "run 1 is nil"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteHTML(&bytes.Buffer{}, tt.runs, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// An empty run (no functions, no timeline) still renders, without charts.
func TestWriteHTMLEmptyRun(t *testing.T) {
	page := string(renderHTML(t, []*report.Run{{}}, HTMLOptions{}))
	if !strings.Contains(page, `<body data-charts="0">`) || !strings.Contains(page, "NOT COMPLIANT") {
		t.Errorf("empty run page:\n%s", page)
	}
}

// A timeline without per-function p95s still charts the p95 of all
// operations.
func TestWriteHTMLTimelineWithoutFunctions(t *testing.T) {
	r := compliantRun()
	r.Timeline = sampleTimeline(t, 3)
	for i := range r.Timeline {
		r.Timeline[i].Functions = nil
	}
	page := string(renderHTML(t, []*report.Run{r}, HTMLOptions{}))
	if !strings.Contains(page, `<canvas id="run-timeline-p95"`) || !strings.Contains(page, `{"label":"all protocol operations","data":[`) {
		t.Error("no p95 over time for a timeline without functions")
	}
}

// TestPaletteDistinctForEveryFunction: no two timed functions share a
// colour (SMTP Connect and Delivery Time (remote) did).
func TestPaletteDistinctForEveryFunction(t *testing.T) {
	seen := map[string]measure.Function{}
	for i, f := range fixtureFunctions {
		c := functionColor(f, i)
		if g, ok := seen[c]; ok {
			t.Errorf("%s and %s share the colour %s", f, g, c)
		}
		seen[c] = f
		if c == colorLimit || c == colorTarget || c == colorBad {
			t.Errorf("%s has a reference or error colour %s", f, c)
		}
	}
}

// checkChartsReadFirst: the per-function charts show at most five
// functions at first, in colours of their own, the rest hidden; the
// response-time chart has no delivery time, which has a chart of its own.
func checkChartsReadFirst(t *testing.T, page string) {
	t.Helper()
	_, rest, _ := strings.Cut(page, `<script type="application/json" id="mb-data">`)
	data, _, _ := strings.Cut(rest, "</script>")
	var cd chartData
	if err := json.Unmarshal([]byte(data), &cd); err != nil {
		t.Fatalf("chart data: %v", err)
	}
	for _, c := range cd.Charts {
		shown, colours := 0, map[string]bool{}
		for _, d := range c.Datasets {
			isFunction := measure.Known(measure.Function(d.Label))
			if c.ID == "run-timeline-p95" && measure.IsDelivery(measure.Function(d.Label)) {
				t.Errorf("%s draws %s", c.ID, d.Label)
			}
			if isFunction && !d.Hidden {
				shown++
				if colours[d.Color] {
					t.Errorf("%s: two shown series in %s", c.ID, d.Color)
				}
				colours[d.Color] = true
			}
		}
		if (c.ID == "run-timeline-p95" || c.ID == "run-percentiles") && (shown == 0 || shown > visibleFunctions) {
			t.Errorf("%s shows %d functions at first, want 1 to %d", c.ID, shown, visibleFunctions)
		}
	}
}

// TestServerInHTML: the page has the server's section and its chart,
// with the process groups' cores and the host's percent on their own axis.
func TestServerInHTML(t *testing.T) {
	r := compliantRun()
	r.Server = serverFixture()
	for i := range 3 {
		r.Server.Timeline = append(r.Server.Timeline, metrics.ServerPoint{At: r.Started.Add(time.Duration(i) * 10 * time.Second),
			Values: map[string]float64{"host.cpu_percent": 80 + float64(i), "dovecot.cpu_cores": 1 + 0.1*float64(i), "mailbench.cpu_cores": 0.4}})
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, []*report.Run{r}, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, s := range []string{"<h3>The server&#39;s resources</h3>", `id="run-server"`, "dovecot     cpu_cores 1.10 / 1.60 cores",
		`"label":"host.cpu_percent"`, `"axis":"y2"`, `"label":"dovecot.cpu_cores"`} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}
