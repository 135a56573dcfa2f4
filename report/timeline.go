package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// The report's timeline is the recorder's: Run.Timeline holds
// metrics.Point values as the recorder made them (one interval of the
// recorder, default 10 s, or several adjacent ones merged so that a long run
// keeps at most metrics.MaxPoints points; operations count in the interval
// they started in). Below is only their JSON form, the merge of shards and
// the text section.

// Timeline is a run's measurement window over time (Run.Timeline). JSON
// holds each point in the form of jsonPoint.
type Timeline []metrics.Point

// MarshalJSON writes the points (jsonPoint).
func (tl Timeline) MarshalJSON() ([]byte, error) { return json.Marshal(timelineToJSON(tl)) }

// UnmarshalJSON reads the points back, checking them (timelineFromJSON).
func (tl *Timeline) UnmarshalJSON(b []byte) error {
	var js []jsonPoint
	if err := json.Unmarshal(b, &js); err != nil {
		return err
	}
	var err error
	*tl, err = timelineFromJSON(js)
	return err
}

// jsonTotals is the JSON form of metrics.Totals.
type jsonTotals struct {
	Operations int64 `json:"operations"`
	Errors     int64 `json:"errors"`
	P50US      int64 `json:"p50_us"`
	P95US      int64 `json:"p95_us"`
	P99US      int64 `json:"p99_us"`
	MaxUS      int64 `json:"max_us"`
}

// jsonPoint is the JSON form of a metrics.Point. The protocol totals are
// flat (as in schema version 1 before the delivery times were kept apart);
// p95_us_by_function repeats functions[].p95_us for older readers.
type jsonPoint struct {
	Start       string              `json:"start"`
	LengthUS    int64               `json:"length_us"`
	Sessions    int64               `json:"sessions"`
	Operations  int64               `json:"operations"`
	Errors      int64               `json:"errors"`
	P50US       int64               `json:"p50_us"`
	P95US       int64               `json:"p95_us"`
	P99US       int64               `json:"p99_us"`
	MaxUS       int64               `json:"max_us"`
	Late        int64               `json:"late"`
	Delivery    *jsonTotals         `json:"delivery,omitempty"`
	FunctionP95 map[string]int64    `json:"p95_us_by_function,omitempty"`
	Functions   []jsonFunctionPoint `json:"functions,omitempty"`
	// Clients: the connected clients in the interval; absent without
	// [clients] (and in reports before it).
	Clients *metrics.ClientPoint `json:"clients,omitempty"`
}

type jsonFunctionPoint struct {
	Function string `json:"function"`
	jsonTotals
	Histogram string `json:"histogram,omitempty"`
}

func totalsToJSON(t metrics.Totals) jsonTotals {
	return jsonTotals{Operations: t.Operations, Errors: t.Errors, P50US: us(t.P50), P95US: us(t.P95), P99US: us(t.P99), MaxUS: us(t.Max)}
}

func (j jsonTotals) totals() (metrics.Totals, error) {
	if j.Operations < 0 || j.Errors < 0 || j.Errors > j.Operations {
		return metrics.Totals{}, fmt.Errorf("inconsistent counts (%d operations, %d errors)", j.Operations, j.Errors)
	}
	if j.P50US < 0 || j.P95US < 0 || j.P99US < 0 || j.MaxUS < 0 {
		return metrics.Totals{}, fmt.Errorf("negative percentile")
	}
	return metrics.Totals{Operations: j.Operations, Errors: j.Errors,
		P50: fromUS(j.P50US), P95: fromUS(j.P95US), P99: fromUS(j.P99US), Max: fromUS(j.MaxUS)}, nil
}

func timelineToJSON(tl []metrics.Point) []jsonPoint {
	if len(tl) == 0 {
		return nil
	}
	out := make([]jsonPoint, len(tl))
	for i, p := range tl {
		t := totalsToJSON(p.Totals)
		j := jsonPoint{Start: fmtJSONTime(p.Start), LengthUS: us(p.Length), Sessions: p.Sessions,
			Operations: t.Operations, Errors: t.Errors, P50US: t.P50US, P95US: t.P95US, P99US: t.P99US, MaxUS: t.MaxUS,
			Late: p.Late, Clients: p.Clients}
		if p.Delivery != (metrics.Totals{}) {
			d := totalsToJSON(p.Delivery)
			j.Delivery = &d
		}
		for _, fp := range p.Functions {
			if j.FunctionP95 == nil {
				j.FunctionP95 = make(map[string]int64, len(p.Functions))
			}
			j.FunctionP95[string(fp.Function)] = us(fp.P95)
			j.Functions = append(j.Functions, jsonFunctionPoint{Function: string(fp.Function), jsonTotals: totalsToJSON(fp.Totals), Histogram: fp.Histogram})
		}
		out[i] = j
	}
	return out
}

// timelineFromJSON reads the timeline back. Fields absent (reports written
// before they were stored) read as zero; a report without "functions" gets
// its functions from p95_us_by_function, with a p95 only. Histograms are
// checked (length, geometry) but not decoded: Merge decodes them one at a
// time.
func timelineFromJSON(js []jsonPoint) ([]metrics.Point, error) {
	if len(js) == 0 {
		return nil, nil
	}
	out := make([]metrics.Point, len(js))
	for i, j := range js {
		start, err := parseJSONTime(j.Start)
		if err != nil {
			return nil, fmt.Errorf("timeline[%d]: %w", i, err)
		}
		if j.LengthUS <= 0 || j.Sessions < 0 || j.Late < 0 {
			return nil, fmt.Errorf("timeline[%d]: inconsistent counts or length", i)
		}
		if i > 0 && !start.After(out[i-1].Start) {
			return nil, fmt.Errorf("timeline[%d]: not after the previous interval", i)
		}
		p := metrics.Point{Start: start, Length: fromUS(j.LengthUS), Sessions: j.Sessions, Late: j.Late, Clients: j.Clients}
		if c := j.Clients; c != nil && (c.Target < 0 || c.Held < 0 || c.Drops < 0) {
			return nil, fmt.Errorf("timeline[%d]: clients: negative counts", i)
		}
		if p.Totals, err = (jsonTotals{j.Operations, j.Errors, j.P50US, j.P95US, j.P99US, j.MaxUS}).totals(); err != nil {
			return nil, fmt.Errorf("timeline[%d]: %w", i, err)
		}
		if j.Delivery != nil {
			if p.Delivery, err = j.Delivery.totals(); err != nil {
				return nil, fmt.Errorf("timeline[%d]: delivery: %w", i, err)
			}
		}
		if p.Late > p.Operations+p.Delivery.Operations {
			return nil, fmt.Errorf("timeline[%d]: more late operations than operations", i)
		}
		if len(j.Functions) > 0 {
			var sum [2]metrics.Totals // protocol operations, delivery times
			seen := map[measure.Function]bool{}
			for _, jf := range j.Functions {
				f := measure.Function(jf.Function)
				if seen[f] {
					return nil, fmt.Errorf("timeline[%d]: function %q appears twice", i, f)
				}
				seen[f] = true
				fp := metrics.FunctionPoint{Function: f, Histogram: jf.Histogram}
				if fp.Totals, err = jf.totals(); err != nil {
					return nil, fmt.Errorf("timeline[%d]: %q: %w", i, f, err)
				}
				if fp.Histogram != "" {
					if err := metrics.CheckEncodedHistogram(fp.Histogram); err != nil {
						return nil, fmt.Errorf("timeline[%d]: %q: %w", i, f, err)
					}
				}
				k := 0
				if metrics.IsDelivery(f) {
					k = 1
				}
				sum[k].Operations += fp.Operations
				sum[k].Errors += fp.Errors
				p.Functions = append(p.Functions, fp)
			}
			if sum[0].Operations != p.Operations || sum[0].Errors != p.Errors ||
				sum[1].Operations != p.Delivery.Operations || sum[1].Errors != p.Delivery.Errors {
				return nil, fmt.Errorf("timeline[%d]: the functions' counts do not add up to the totals", i)
			}
		} else if len(j.FunctionP95) > 0 {
			for f, v := range j.FunctionP95 {
				if v < 0 {
					return nil, fmt.Errorf("timeline[%d]: negative p95 of %q", i, f)
				}
				p.Functions = append(p.Functions, metrics.FunctionPoint{Function: measure.Function(f), Totals: metrics.Totals{P95: fromUS(v)}})
			}
			slices.SortFunc(p.Functions, func(a, b metrics.FunctionPoint) int { return FunctionOrder(a.Function, b.Function) })
		}
		out[i] = p
	}
	return out, nil
}

// mergeTimelines merges the shards' timelines when every shard has one,
// their points are of the same length and their windows start within one
// point length of each other (shards of one run, started by hand or by a
// script a little apart). The earliest start is the common epoch: each
// shard's point goes to the merged point whose start is nearest its own (so
// a point moves by at most half a length), and the points that meet there
// merge exactly (metrics.MergePoints: counts added, histograms merged,
// percentiles from the merged histograms). It returns the warnings: why the
// timeline was dropped, that it was shifted onto a common epoch, or that its
// percentiles are upper bounds (a shard without histograms).
func mergeTimelines(runs []*Run) ([]metrics.Point, []string) {
	var with int
	for _, r := range runs {
		if len(r.Timeline) > 0 {
			with++
		}
	}
	if with == 0 {
		return nil, nil
	}
	if with < len(runs) {
		return nil, []string{"timeline dropped: not every merged run has one"}
	}
	length := func(tl []metrics.Point) time.Duration {
		var l time.Duration
		for _, p := range tl {
			l = max(l, p.Length)
		}
		return l
	}
	l := length(runs[0].Timeline)
	epoch := runs[0].Timeline[0].Start
	for _, r := range runs[1:] {
		if length(r.Timeline) != l {
			return nil, []string{"timeline dropped: the merged runs' intervals differ in length"}
		}
		if s := r.Timeline[0].Start; s.Before(epoch) {
			epoch = s
		}
	}
	var warn []string
	slots := map[int64][]metrics.Point{}
	var last int64
	var shifted time.Duration
	for _, r := range runs {
		off := r.Timeline[0].Start.Sub(epoch)
		if off >= l {
			return nil, []string{"timeline dropped: the merged runs' measurement windows start more than one interval apart"}
		}
		shifted = max(shifted, min(off%l, l-off%l))
		for _, p := range r.Timeline {
			d := p.Start.Sub(epoch)
			if (d-off)%l != 0 {
				return nil, []string{"timeline dropped: a merged run's intervals are not evenly spaced"}
			}
			k := int64((d + l/2) / l)
			slots[k] = append(slots[k], p)
			last = max(last, k)
		}
	}
	out := make([]metrics.Point, 0, last+1)
	exact := true
	for k := int64(0); k <= last; k++ {
		ps := slots[k]
		if len(ps) == 0 {
			out = append(out, metrics.Point{Start: epoch.Add(time.Duration(k) * l), Length: l})
			continue
		}
		p, ex, err := metrics.MergePoints(ps...)
		if err != nil {
			return nil, []string{fmt.Sprintf("timeline dropped: interval %d: %v", k, err)}
		}
		exact = exact && ex
		p.Start = epoch.Add(time.Duration(k) * l)
		out = append(out, p)
	}
	if shifted > 0 {
		warn = append(warn, fmt.Sprintf("timeline: the merged runs' intervals were aligned onto the earliest run's, moving some by up to %v", shifted))
	}
	if !exact {
		warn = append(warn, "timeline: a merged run has no timeline histograms (an older report), so merged percentiles are upper bounds (the largest of the runs')")
	}
	return out, warn
}
