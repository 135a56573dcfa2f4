package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

var tlStart = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// sampleTimeline is n 10 s intervals whose load and p95 grow with i.
func sampleTimeline(n int) []Interval {
	tl := make([]Interval, n)
	for i := range tl {
		tl[i] = Interval{
			Start: tlStart.Add(time.Duration(i) * 10 * time.Second), Length: 10 * time.Second,
			Sessions: int64(i + 1), Operations: int64(100 * (i + 1)), Errors: int64(i % 3),
			P95: time.Duration(i+1) * 10 * time.Millisecond,
			FunctionP95: map[measure.Function]time.Duration{
				measure.IMAPConnect: time.Duration(i+1) * 12 * time.Millisecond, measure.SMTPData: 3 * time.Millisecond,
			},
		}
	}
	return tl
}

func TestTimelineJSONRoundTrip(t *testing.T) {
	r := compliantRun()
	r.Timeline = sampleTimeline(5)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"p95_us_by_function": {`) || !strings.Contains(buf.String(), `"IMAP Connect": 12000,`) {
		t.Errorf("JSON timeline not in the documented form:\n%s", buf.String())
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Timeline, r.Timeline) {
		t.Errorf("timeline round trip:\n got %+v\nwant %+v", got.Timeline, r.Timeline)
	}
}

func TestTimelineJSONRejects(t *testing.T) {
	tests := []struct {
		name   string
		change func(tl []Interval)
	}{
		{"errors above operations", func(tl []Interval) { tl[1].Errors = tl[1].Operations + 1 }},
		{"zero length", func(tl []Interval) { tl[0].Length = 0 }},
		{"out of order", func(tl []Interval) { tl[2].Start = tl[0].Start }},
		{"negative p95", func(tl []Interval) { tl[1].P95 = -time.Millisecond }},
		{"negative function p95", func(tl []Interval) { tl[1].FunctionP95[measure.IMAPConnect] = -time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compliantRun()
			r.Timeline = sampleTimeline(3)
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

func TestTimelineTextGolden(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{{"timeline_short.txt.golden", 4}, {"timeline_grouped.txt.golden", 45}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeTimeline(&buf, sampleTimeline(tt.n))
			out := buf.String()
			lines := strings.Count(out, "\n") - 3 // blank, title, header
			group := (tt.n + maxTextIntervals - 1) / maxTextIntervals
			if want := (tt.n + group - 1) / group; lines > maxTextIntervals || lines != want {
				t.Errorf("%d interval lines for %d intervals", lines, tt.n)
			}
			golden(t, tt.name, buf.Bytes())
		})
	}
	var full bytes.Buffer
	r := compliantRun()
	r.Timeline = sampleTimeline(2)
	if err := WriteText(&full, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(full.String(), "Over time") {
		t.Error("WriteText has no Over time section")
	}
}

func TestMergeTimelines(t *testing.T) {
	a, b := compliantRun(), compliantRun()
	a.Timeline, b.Timeline = sampleTimeline(3), sampleTimeline(3)
	b.Seed++ // another generator's shard, not the same run twice
	b.Timeline[1].P95 = time.Second
	b.Timeline[2].FunctionP95 = map[measure.Function]time.Duration{measure.IMAPList: 7 * time.Millisecond}
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Timeline) != 3 {
		t.Fatalf("merged timeline has %d intervals", len(m.Timeline))
	}
	for i, iv := range m.Timeline {
		if iv.Operations != 2*a.Timeline[i].Operations || iv.Errors != 2*a.Timeline[i].Errors || iv.Sessions != 2*a.Timeline[i].Sessions {
			t.Errorf("interval %d not summed: %+v", i, iv)
		}
	}
	if m.Timeline[1].P95 != time.Second || m.Timeline[0].P95 != a.Timeline[0].P95 {
		t.Errorf("merged p95 is not the shards' largest: %v, %v", m.Timeline[0].P95, m.Timeline[1].P95)
	}
	if got := m.Timeline[2].FunctionP95; got[measure.IMAPList] != 7*time.Millisecond || got[measure.IMAPConnect] != a.Timeline[2].FunctionP95[measure.IMAPConnect] {
		t.Errorf("merged function p95s: %v", got)
	}

	tests := []struct {
		name   string
		change func(r *Run)
	}{
		{"shifted", func(r *Run) { r.Timeline[0].Start = r.Timeline[0].Start.Add(time.Second) }},
		{"shorter", func(r *Run) { r.Timeline = r.Timeline[:2] }},
		{"missing", func(r *Run) { r.Timeline = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := compliantRun(), compliantRun()
			a.Timeline, b.Timeline = sampleTimeline(3), sampleTimeline(3)
			b.Seed++
			tt.change(b)
			m, err := Merge(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if m.Timeline != nil {
				t.Errorf("misaligned timelines merged: %+v", m.Timeline)
			}
			if !slicesContains(m.Warnings, "timeline dropped") {
				t.Errorf("no warning: %q", m.Warnings)
			}
		})
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
