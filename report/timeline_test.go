package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/internal/testing/timelinetest"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// The timelines of these tests (internal/testing/timelinetest).
var (
	tlStart        = timelinetest.Start
	fnPoint        = timelinetest.FunctionPoint
	mkPoint        = timelinetest.Point
	sampleTimeline = timelinetest.Sample
)

func TestTimelineJSONRoundTrip(t *testing.T) {
	r := compliantRun()
	r.Timeline = sampleTimeline(t, 5)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"p95_us_by_function": {`, `"IMAP Connect": 11407,`, `"delivery": {`, `"histogram": "HISTF`, `"p99_us": `, `"late": 0,`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("JSON timeline lacks %s:\n%s", s, buf.String())
		}
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Timeline, r.Timeline) {
		t.Errorf("timeline round trip:\n got %+v\nwant %+v", got.Timeline, r.Timeline)
	}
}

// TestTimelineJSONReadsOlderReports: a timeline as schema version 1 wrote
// it before the points held percentiles beyond p95, delivery times apart
// and histograms reads with those fields zero, functions from
// p95_us_by_function.
func TestTimelineJSONReadsOlderReports(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, compliantRun()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["timeline"] = []any{map[string]any{
		"start": "2026-03-01T10:00:00Z", "length_us": 10000000, "sessions": 3, "operations": 100, "errors": 1,
		"p95_us": 20000, "p95_us_by_function": map[string]any{"SMTP Data": 3000, "IMAP Connect": 24000},
	}}
	old, _ := json.Marshal(doc)
	r, err := ReadJSON(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	want := Timeline{{Start: tlStart, Length: 10 * time.Second, Sessions: 3,
		Totals: metrics.Totals{Operations: 100, Errors: 1, P95: 20 * time.Millisecond},
		Functions: []metrics.FunctionPoint{
			{Function: measure.SMTPData, Totals: metrics.Totals{P95: 3 * time.Millisecond}},
			{Function: measure.IMAPConnect, Totals: metrics.Totals{P95: 24 * time.Millisecond}},
		}}}
	if !reflect.DeepEqual(r.Timeline, want) {
		t.Errorf("older timeline read as\n%+v\nwant\n%+v", r.Timeline, want)
	}
}

func TestTimelineJSONRejects(t *testing.T) {
	tests := []struct {
		name   string
		change func(tl []metrics.Point)
	}{
		{"errors above operations", func(tl []metrics.Point) { tl[1].Errors = tl[1].Operations + 1 }},
		{"zero length", func(tl []metrics.Point) { tl[0].Length = 0 }},
		{"out of order", func(tl []metrics.Point) { tl[2].Start = tl[0].Start }},
		{"negative p95", func(tl []metrics.Point) { tl[1].P95 = -time.Millisecond }},
		{"negative function p95", func(tl []metrics.Point) { tl[1].Functions[1].P95 = -time.Millisecond }},
		{"functions do not add up", func(tl []metrics.Point) { tl[1].Functions[0].Operations++ }},
		{"deliveries do not add up", func(tl []metrics.Point) { tl[0].Delivery.Operations++ }},
		{"duplicated function", func(tl []metrics.Point) { tl[1].Functions[1] = tl[1].Functions[0] }},
		{"more late than operations", func(tl []metrics.Point) { tl[1].Late = 1 << 40 }},
		{"foreign histogram", func(tl []metrics.Point) {
			h := hdrhistogram.New(1, 1000, 2)
			h.RecordValue(5)
			enc, _ := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			tl[1].Functions[0].Histogram = string(enc)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compliantRun()
			r.Timeline = sampleTimeline(t, 3)
			tt.change(r.Timeline)
			var buf bytes.Buffer
			if err := WriteJSON(&buf, r); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadJSON(&buf); err == nil || !strings.Contains(err.Error(), "timeline") {
				t.Errorf("ReadJSON: %v, want a timeline error", err)
			}
		})
	}
}

// TestMergeTimelinesExact: shards of one run merge into the timeline of
// one recorder that saw every operation, even when their windows start a
// few seconds apart.
func TestMergeTimelinesExact(t *testing.T) {
	for _, skew := range []time.Duration{0, 3 * time.Second, -4 * time.Second, 6 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			a, b, whole := compliantRun(), compliantRun(), make([]metrics.Point, 3)
			for i := range 3 {
				k := int64(i + 1)
				fa := fnPoint(measure.IMAPConnect, 10*k, 1, time.Duration(k)*5*time.Millisecond)
				fb := fnPoint(measure.IMAPConnect, 30, 0, time.Duration(k)*40*time.Millisecond)
				da := fnPoint(measure.DeliveryLocal, 4, 0, time.Duration(k)*time.Second)
				at := tlStart.Add(time.Duration(i) * 10 * time.Second)
				a.Timeline = append(a.Timeline, mkPoint(at, 10*time.Second, k, fa, da))
				b.Timeline = append(b.Timeline, mkPoint(at.Add(skew), 10*time.Second, 2, fb))
				// the whole: both shards' values in one histogram
				all, _, err := metrics.MergePoints(a.Timeline[i], b.Timeline[i])
				if err != nil {
					t.Fatal(err)
				}
				whole[i] = all
			}
			b.Seed++ // another generator's shard, not the same run twice
			m, err := Merge(a, b)
			if err != nil {
				t.Fatal(err)
			}
			epoch := tlStart
			if skew < 0 {
				epoch = tlStart.Add(skew)
			}
			shift := int64(0)
			if skew >= 5*time.Second {
				shift = 1 // b's points are nearer the next slot
			}
			if skew != 0 != slicesContains(m.Warnings, "aligned onto the earliest run's") {
				t.Errorf("warnings %q for a skew of %v", m.Warnings, skew)
			}
			if want := 3 + int(shift); len(m.Timeline) != want {
				t.Fatalf("merged timeline has %d points, want %d", len(m.Timeline), want)
			}
			for i, p := range m.Timeline {
				if !p.Start.Equal(epoch.Add(time.Duration(i) * 10 * time.Second)) {
					t.Errorf("point %d starts at %v", i, p.Start)
				}
			}
			if shift == 0 {
				for i := range whole {
					whole[i].Start = m.Timeline[i].Start
					if !reflect.DeepEqual(m.Timeline[i], whole[i]) {
						t.Errorf("point %d\n got %+v\nwant %+v", i, m.Timeline[i], whole[i])
					}
				}
				if m.Timeline[1].Operations != 20+30 || m.Timeline[1].Delivery.Operations != 4 || m.Timeline[1].Sessions != 4 {
					t.Errorf("point 1 not summed: %+v", m.Timeline[1])
				}
				// exact, not the largest of the shards': 30 of 50 values are b's (≤ 80 ms)
				if p95 := m.Timeline[1].P95; p95 < 70*time.Millisecond || p95 > 80*time.Millisecond {
					t.Errorf("merged p95 %v", p95)
				}
			}
		})
	}
}

// TestMergeTimelinesThroughJSON: the exact merge works on reports read
// back from JSON, and on older ones (no histograms) falls back to upper
// bounds with a warning.
func TestMergeTimelinesThroughJSON(t *testing.T) {
	a, b := compliantRun(), compliantRun()
	a.Timeline, b.Timeline = sampleTimeline(t, 3), sampleTimeline(t, 3)
	b.Seed++ // another generator's shard, not the same run twice
	direct, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := roundTrip(t, a), roundTrip(t, b)
	viaJSON, err := Merge(ra, rb)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(viaJSON.Timeline, direct.Timeline) {
		t.Errorf("merge of JSON reports differs:\n got %+v\nwant %+v", viaJSON.Timeline, direct.Timeline)
	}
	for i := range rb.Timeline {
		for k := range rb.Timeline[i].Functions {
			rb.Timeline[i].Functions[k].Histogram = ""
		}
	}
	old, err := Merge(ra, rb)
	if err != nil {
		t.Fatal(err)
	}
	if !slicesContains(old.Warnings, "upper bounds") || len(old.Timeline) != 3 || old.Timeline[2].Operations != 2*a.Timeline[2].Operations ||
		old.Timeline[2].P95 != a.Timeline[2].P95 {
		t.Errorf("merge with an older report: %q %+v", old.Warnings, old.Timeline)
	}
}

func roundTrip(t *testing.T, r *Run) *Run {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMergeTimelinesDropped(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *Run)
	}{
		{"an interval apart", func(r *Run) {
			for i := range r.Timeline {
				r.Timeline[i].Start = r.Timeline[i].Start.Add(10 * time.Second)
			}
		}},
		{"other length", func(r *Run) {
			for i := range r.Timeline {
				r.Timeline[i].Start = tlStart.Add(time.Duration(i) * 20 * time.Second)
				r.Timeline[i].Length = 20 * time.Second
			}
		}},
		{"uneven", func(r *Run) { r.Timeline[1].Start = r.Timeline[1].Start.Add(time.Second) }},
		{"missing", func(r *Run) { r.Timeline = nil }},
		{"bad histogram", func(r *Run) { r.Timeline[1].Functions[0].Histogram = "HISTF" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := compliantRun(), compliantRun()
			a.Timeline, b.Timeline = sampleTimeline(t, 3), sampleTimeline(t, 3)
			b.Seed++
			tt.change(b)
			m, err := Merge(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if m.Timeline != nil {
				t.Errorf("timelines merged: %+v", m.Timeline)
			}
			if !slicesContains(m.Warnings, "timeline dropped") {
				t.Errorf("no warning: %q", m.Warnings)
			}
		})
	}
}

// TestTimelineJSONSize notes what a timeline weighs in the JSON report: a
// 10-minute window of 10 s intervals with every function busy (100
// operations of each per interval, spread over 1..500 ms).
func TestTimelineJSONSize(t *testing.T) {
	r := compliantRun()
	var base bytes.Buffer
	if err := WriteJSON(&base, r); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		var fps []metrics.FunctionPoint
		for k, f := range fixtureFunctions {
			fps = append(fps, fnPoint(f, 100, int64(k%2), time.Duration(500+i+k)*time.Millisecond))
		}
		r.Timeline = append(r.Timeline, mkPoint(tlStart.Add(time.Duration(i)*10*time.Second), 10*time.Second, 30, fps...))
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	size := buf.Len() - base.Len()
	t.Logf("timeline of 60 points × %d functions: %d bytes of JSON (%d a point)", len(fixtureFunctions), size, size/60)
	if size > 2<<20 {
		t.Errorf("timeline of a 10-minute run is %d bytes of JSON", size)
	}
}

func slicesContains(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestMergeConnectThroughJSON: the connect breakdowns of shards read back
// from JSON merge exactly (their histograms are stored).
func TestMergeConnectThroughJSON(t *testing.T) {
	shard := func(ms int) *Run {
		b := metrics.NewBreakdown()
		for i := range 50 {
			b.Observe(measure.Observation{Function: measure.IMAPConnect, Connect: &measure.ConnectPhases{
				TCP: time.Duration(ms+i) * time.Millisecond, Greeting: time.Millisecond, Auth: 2 * time.Millisecond}})
		}
		r := compliantRun()
		r.Connect = b.Snapshot()
		return r
	}
	a, b := shard(1), shard(100)
	b.Seed++ // another generator's shard, not the same run twice
	direct, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Merge(roundTrip(t, a), roundTrip(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if slicesContains(m.Warnings, "connect") || m.Connect == nil {
		t.Fatalf("connect breakdown not merged: %q", m.Warnings)
	}
	got, _ := m.Connect.Function(measure.IMAPConnect)
	want, _ := direct.Connect.Function(measure.IMAPConnect)
	if got.Connects != 100 || got.TCP.P95US != want.TCP.P95US || got.TCP.P50US != want.TCP.P50US || got.TCP.P50US < 50000 {
		t.Errorf("merged from JSON %+v, want %+v", got.TCP, want.TCP)
	}
}

// TestTimelineClientsMerge: the clients columns of a timeline survive the
// JSON round trip, and two shards' timelines merge by summing them
// (render's TestTimelineClients shows them).
func TestTimelineClientsMerge(t *testing.T) {
	r := compliantRun()
	r.Timeline = sampleTimeline(t, 3)
	for i := range r.Timeline {
		r.Timeline[i].Clients = &metrics.ClientPoint{Target: 500, Held: int64(500 - 10*i), Drops: int64(i)}
	}
	got := roundTrip(t, r)
	if !reflect.DeepEqual(got.Timeline, r.Timeline) {
		t.Fatalf("round trip: %+v", got.Timeline)
	}
	m, warn := mergeTimelines([]*Run{r, got})
	if len(warn) > 0 || m[2].Clients == nil || *m[2].Clients != (metrics.ClientPoint{Target: 1000, Held: 960, Drops: 4}) {
		t.Errorf("two shards merged: %+v %v", m[2].Clients, warn)
	}
}
