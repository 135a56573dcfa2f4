package report

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// Interval is one point of the measurement window's timeline: one interval
// of the recorder (default 10 s), or several adjacent ones merged so that a
// long run keeps at most 720 points. Operations count in the interval they
// started in.
type Interval struct {
	Start    time.Time
	Length   time.Duration
	Sessions int64 // sessions started (to about a second)
	// Operations, Errors and P95 are over all functions; P95 is taken from
	// the merged histograms of the interval's functions (after report.Merge,
	// an upper bound: the largest of the shards' P95).
	Operations, Errors int64
	P95                time.Duration
	// FunctionP95 is each function's p95 over the interval, for functions
	// with operations.
	FunctionP95 map[measure.Function]time.Duration
}

type jsonInterval struct {
	Start       string           `json:"start"`
	LengthUS    int64            `json:"length_us"`
	Sessions    int64            `json:"sessions"`
	Operations  int64            `json:"operations"`
	Errors      int64            `json:"errors"`
	P95US       int64            `json:"p95_us"`
	FunctionP95 map[string]int64 `json:"p95_us_by_function,omitempty"`
}

func timelineToJSON(tl []Interval) []jsonInterval {
	if len(tl) == 0 {
		return nil
	}
	out := make([]jsonInterval, len(tl))
	for i, iv := range tl {
		j := jsonInterval{Start: fmtJSONTime(iv.Start), LengthUS: us(iv.Length), Sessions: iv.Sessions,
			Operations: iv.Operations, Errors: iv.Errors, P95US: us(iv.P95)}
		if len(iv.FunctionP95) > 0 {
			j.FunctionP95 = make(map[string]int64, len(iv.FunctionP95))
			for f, d := range iv.FunctionP95 {
				j.FunctionP95[string(f)] = us(d)
			}
		}
		out[i] = j
	}
	return out
}

func timelineFromJSON(js []jsonInterval) ([]Interval, error) {
	if len(js) == 0 {
		return nil, nil
	}
	out := make([]Interval, len(js))
	for i, j := range js {
		start, err := parseJSONTime(j.Start)
		if err != nil {
			return nil, fmt.Errorf("timeline[%d]: %w", i, err)
		}
		if j.LengthUS <= 0 || j.Operations < 0 || j.Errors < 0 || j.Errors > j.Operations || j.Sessions < 0 || j.P95US < 0 {
			return nil, fmt.Errorf("timeline[%d]: inconsistent counts or length", i)
		}
		if i > 0 && !start.After(out[i-1].Start) {
			return nil, fmt.Errorf("timeline[%d]: not after the previous interval", i)
		}
		iv := Interval{Start: start, Length: fromUS(j.LengthUS), Sessions: j.Sessions,
			Operations: j.Operations, Errors: j.Errors, P95: fromUS(j.P95US)}
		if len(j.FunctionP95) > 0 {
			iv.FunctionP95 = make(map[measure.Function]time.Duration, len(j.FunctionP95))
			for f, v := range j.FunctionP95 {
				if v < 0 {
					return nil, fmt.Errorf("timeline[%d]: negative p95 of %q", i, f)
				}
				iv.FunctionP95[measure.Function(f)] = fromUS(v)
			}
		}
		out[i] = iv
	}
	return out, nil
}

// mergeTimelines sums the shards' timelines interval by interval when every
// shard has one with the same interval starts and lengths (shards of one run
// share the measurement window); P95s become the largest of the shards'
// (an upper bound of the merged p95, which lies between the shards' smallest
// and largest). Otherwise the timeline is dropped and a warning returned.
func mergeTimelines(runs []*Run) ([]Interval, string) {
	var with int
	for _, r := range runs {
		if len(r.Timeline) > 0 {
			with++
		}
	}
	if with == 0 {
		return nil, ""
	}
	if with < len(runs) {
		return nil, "timeline dropped: not every merged run has one"
	}
	base := runs[0].Timeline
	for _, r := range runs[1:] {
		if len(r.Timeline) != len(base) {
			return nil, "timeline dropped: the merged runs' intervals do not align"
		}
		for i, iv := range r.Timeline {
			if !iv.Start.Equal(base[i].Start) || iv.Length != base[i].Length {
				return nil, "timeline dropped: the merged runs' intervals do not align"
			}
		}
	}
	out := make([]Interval, len(base))
	for i := range base {
		m := Interval{Start: base[i].Start, Length: base[i].Length}
		for _, r := range runs {
			iv := r.Timeline[i]
			m.Sessions += iv.Sessions
			m.Operations += iv.Operations
			m.Errors += iv.Errors
			m.P95 = max(m.P95, iv.P95)
			for f, d := range iv.FunctionP95 {
				if m.FunctionP95 == nil {
					m.FunctionP95 = map[measure.Function]time.Duration{}
				}
				m.FunctionP95[f] = max(m.FunctionP95[f], d)
			}
		}
		out[i] = m
	}
	return out, ""
}

// maxTextIntervals bounds the lines of the text report's "Over time" section.
const maxTextIntervals = 20

// writeTimeline writes the "Over time" section: one line per interval, or
// per group of adjacent intervals when there are more than 20 (operations,
// errors and sessions summed; p95 the largest of the group's).
func writeTimeline(w io.Writer, tl []Interval) {
	if len(tl) == 0 {
		return
	}
	group := (len(tl) + maxTextIntervals - 1) / maxTextIntervals
	fmt.Fprintf(w, "\nOver time (all operations, by start time")
	if group > 1 {
		fmt.Fprintf(w, "; %d intervals a line, p95 the largest of them", group)
	}
	fmt.Fprintf(w, ")\n")
	fmt.Fprintf(w, "%-9s %9s %12s %9s %9s %12s\n", "from", "length", "operations", "ops/s", "errors", "p95 ms")
	t0 := tl[0].Start
	for c := range slices.Chunk(tl, group) {
		var g Interval
		g.Start = c[0].Start
		for _, iv := range c {
			g.Length += iv.Length
			g.Operations += iv.Operations
			g.Errors += iv.Errors
			g.P95 = max(g.P95, iv.P95)
		}
		rate := 0.0
		if g.Length > 0 {
			rate = float64(g.Operations) / g.Length.Seconds()
		}
		fmt.Fprintf(w, "%-9s %9s %12s %9s %9s %12s\n", "+"+fmtOffset(g.Start.Sub(t0)), fmtOffset(g.Length),
			fmtInt(g.Operations), fmtFloat1(rate), fmtInt(g.Errors), fmtMS(g.P95))
	}
}

// fmtOffset formats a duration as h:mm:ss or m:ss.
func fmtOffset(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
