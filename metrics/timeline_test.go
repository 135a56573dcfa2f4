package metrics

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

var tl0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestSlotOfBoundaries(t *testing.T) {
	// Window [tl0, tl0+25s) with 10 s intervals: measurement slots 0,1,2
	// (the last cut at 25 s), ramp-down slot 3 = [25s, 30s), 4 = [30s, 40s).
	tl := newTimeline(tl0, tl0.Add(25*time.Second), TimelineOptions{Interval: 10 * time.Second})
	aligned := newTimeline(tl0, tl0.Add(20*time.Second), TimelineOptions{Interval: 10 * time.Second})
	tests := []struct {
		name     string
		tl       *timeline
		at       time.Duration
		slot     int64
		phase    workload.Phase
		from, to time.Duration
	}{
		{"warm-up, just before the window", tl, -time.Nanosecond, -1, workload.Warmup, -10 * time.Second, 0},
		{"warm-up, on a boundary", tl, -10 * time.Second, -1, workload.Warmup, -10 * time.Second, 0},
		{"warm-up, earlier", tl, -10*time.Second - 1, -2, workload.Warmup, -20 * time.Second, -10 * time.Second},
		{"window start", tl, 0, 0, workload.Measurement, 0, 10 * time.Second},
		{"end of first interval", tl, 10*time.Second - 1, 0, workload.Measurement, 0, 10 * time.Second},
		{"second interval", tl, 10 * time.Second, 1, workload.Measurement, 10 * time.Second, 20 * time.Second},
		{"last, cut interval", tl, 25*time.Second - 1, 2, workload.Measurement, 20 * time.Second, 25 * time.Second},
		{"ramp-down tail of the cut interval", tl, 25 * time.Second, 3, workload.Rampdown, 25 * time.Second, 30 * time.Second},
		{"ramp-down next interval", tl, 30 * time.Second, 4, workload.Rampdown, 30 * time.Second, 40 * time.Second},
		{"aligned: last measurement", aligned, 20*time.Second - 1, 1, workload.Measurement, 10 * time.Second, 20 * time.Second},
		{"aligned: first ramp-down", aligned, 20 * time.Second, 2, workload.Rampdown, 20 * time.Second, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.tl.slotOf(tl0.Add(tt.at))
			if s != tt.slot {
				t.Fatalf("slotOf(+%v) = %d, want %d", tt.at, s, tt.slot)
			}
			if p := tt.tl.phaseOf(s); p != tt.phase {
				t.Errorf("phaseOf(%d) = %s, want %s", s, p, tt.phase)
			}
			from, to := tt.tl.slotBounds(s)
			if !from.Equal(tl0.Add(tt.from)) || !to.Equal(tl0.Add(tt.to)) {
				t.Errorf("slotBounds(%d) = [%v, %v), want [+%v, +%v)", s, from.Sub(tl0), to.Sub(tl0), tt.from, tt.to)
			}
		})
	}
}

func obsAt(f measure.Function, start, d time.Duration, failed bool) measure.Observation {
	o := measure.Observation{Function: f, Start: tl0.Add(start), Duration: d}
	if failed {
		o.Class, o.Err = measure.Protocol, errors.New("NO")
	}
	return o
}

func TestTimelineCountsByStartAndCSV(t *testing.T) {
	var csv bytes.Buffer
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(30*time.Second)), nil)
	r.SetTimeline(TimelineOptions{Interval: 10 * time.Second, Grace: 5 * time.Second, CSV: &csv})
	// An operation that started at 9.9 s and ended at 12 s counts in [0, 10s).
	r.Observe(obsAt(measure.IMAPConnect, -2*time.Second, 100*time.Millisecond, false)) // warm-up
	r.Observe(obsAt(measure.IMAPConnect, 1*time.Second, 10*time.Millisecond, false))
	r.Observe(obsAt(measure.IMAPSelectInbox, 9900*time.Millisecond, 2100*time.Millisecond, true))
	r.Observe(obsAt(measure.IMAPConnect, 10*time.Second, 30*time.Millisecond, false))
	r.SessionsStarted(3, tl0.Add(5*time.Second))
	r.SessionsStarted(5, tl0.Add(12*time.Second))
	// Nothing in [20s, 30s): an empty point. An observation ending at
	// 16 s closes [0, 10s) (10 s + 5 s grace) and the warm-up slot.
	r.Observe(obsAt(measure.IMAPConnect, 15*time.Second, time.Second, false))
	if got := len(r.Timeline()); got != 1 {
		t.Fatalf("after a watermark of 16 s: %d closed points, want 1", got)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if lines[0] != TimeseriesHeader || len(lines) != 1+2+3 {
		t.Fatalf("CSV after the first close:\n%s", csv.String())
	}
	r.Observe(obsAt(measure.IMAPConnect, 31*time.Second, time.Second, false)) // ramp-down
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	pts := r.Timeline()
	if len(pts) != 3 {
		t.Fatalf("%d points, want 3: %+v", len(pts), pts)
	}
	want := []struct {
		ops, errs, sessions int64
		fns                 int
	}{{2, 1, 3, 2}, {2, 0, 2, 1}, {0, 0, 0, 0}}
	for i, w := range want {
		p := pts[i]
		if !p.Start.Equal(tl0.Add(time.Duration(i)*10*time.Second)) || p.Length != 10*time.Second {
			t.Errorf("point %d at +%v for %v", i, p.Start.Sub(tl0), p.Length)
		}
		if p.Operations != w.ops || p.Errors != w.errs || p.Sessions != w.sessions || len(p.Functions) != w.fns {
			t.Errorf("point %d = %d ops, %d errors, %d sessions, %d functions; want %+v", i, p.Operations, p.Errors, p.Sessions, len(p.Functions), w)
		}
	}
	if p := pts[0]; p.Max < 2*time.Second || p.P50 > 20*time.Millisecond || p.Functions[0].Function != measure.IMAPConnect {
		t.Errorf("point 0 percentiles/order: %+v", p)
	}
	got := csv.String()
	for _, line := range []string{
		"2026-03-01T11:59:50Z,warmup,\"IMAP Connect\",1,0,",
		"2026-03-01T12:00:00Z,measurement,\"IMAP SELECT_INBOX\",1,1,21",
		"2026-03-01T12:00:00Z,measurement,ALL,2,1,",
		"2026-03-01T12:00:20Z,measurement,ALL,0,0,0.000,0.000,0.000,0.000",
		"2026-03-01T12:00:30Z,rampdown,\"IMAP Connect\",1,0,",
	} {
		if !strings.Contains(got, "\n"+line) {
			t.Errorf("CSV lacks a line starting %q:\n%s", line, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 1+2+3+2+1+2 {
		t.Errorf("CSV has %d lines:\n%s", n, got)
	}
}

func TestTimelineLateObservation(t *testing.T) {
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(time.Minute)), nil)
	r.SetTimeline(TimelineOptions{Interval: 10 * time.Second, Grace: time.Second})
	r.Observe(obsAt(measure.IMAPConnect, 0, time.Millisecond, false))
	r.Observe(obsAt(measure.IMAPConnect, 30*time.Second, time.Millisecond, false)) // closes 0..1
	r.Observe(obsAt(measure.IMAPList, 5*time.Second, 40*time.Second, true))        // started in slot 0, now closed
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	p := r.Timeline()[0]
	if p.Operations != 2 || p.Errors != 1 || p.Late != 1 || len(p.Functions) != 2 || r.LateObservations() != 1 {
		t.Errorf("late operation not counted in its point: %+v, late %d", p, r.LateObservations())
	}
	if p.Max >= 40*time.Second {
		t.Errorf("a late operation entered the percentiles: max %v", p.Max)
	}
}

func TestTimelineMergesLongWindows(t *testing.T) {
	// 2 hours of 1 s intervals: 7200 intervals, 10 per point.
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(2*time.Hour)), nil)
	r.SetTimeline(TimelineOptions{Interval: time.Second, Grace: time.Second})
	for s := range 7200 {
		r.Observe(obsAt(measure.IMAPConnect, time.Duration(s)*time.Second, time.Duration(s%10+1)*time.Millisecond, false))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	pts := r.Timeline()
	if len(pts) != MaxPoints {
		t.Fatalf("%d points, want %d", len(pts), MaxPoints)
	}
	for i, p := range pts {
		if p.Length != 10*time.Second || p.Operations != 10 || !p.Start.Equal(tl0.Add(time.Duration(i)*10*time.Second)) {
			t.Fatalf("point %d: %+v", i, p)
		}
		// Exact merge: the max of a point is the 10 ms of its last interval.
		if p.Max < 9900*time.Microsecond || p.Max > 10100*time.Microsecond {
			t.Fatalf("point %d max %v, want 10ms", i, p.Max)
		}
	}
}

// TestTimelineBoundedMemory records 10^6 observations of four functions
// over 1440 intervals (a 4-hour window of 10 s intervals, merged two to a
// point: closing an interval costs a histogram merge per function) and checks that at most MaxPoints
// points are kept and that the heap does not grow with the observations.
func TestTimelineBoundedMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("records 10^6 observations (too slow under -short or -race)")
	}
	const n, intervals = 1_000_000, 1440
	d := 10 * time.Second
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(intervals*d)), nil)
	r.SetTimeline(TimelineOptions{Interval: d, Grace: d})
	step := intervals * d / n
	var before, after runtime.MemStats
	for i := range n / 10 { // warm up the histogram free list
		r.Observe(obsAt(measure.AllFunctions[i%4], time.Duration(i)*step, time.Duration(1+i%3000)*time.Millisecond, i%50 == 0))
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := n / 10; i < n; i++ {
		r.Observe(obsAt(measure.AllFunctions[i%4], time.Duration(i)*step, time.Duration(1+i%3000)*time.Millisecond, i%50 == 0))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	pts := r.Timeline()
	if want := intervals / 2; len(pts) != want {
		t.Errorf("%d points kept, want %d", len(pts), want)
	}
	var ops int64
	for _, p := range pts {
		ops += p.Operations
	}
	if ops != n {
		t.Errorf("timeline counts %d operations, want %d", ops, n)
	}
	// Points are ~1.5 KB each (16 functions): ~1 MB for all of them. One
	// sample per observation would be 8 MB.
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 4<<20 {
		t.Errorf("heap grew by %d bytes over %d observations", growth, n)
	}
}

// TestTimelineKeepsDeliveriesApart: the totals count protocol operations
// only; delivery times are in Delivery, in their functions and on the CSV's
// DELIVERY line, not on its ALL line.
func TestTimelineKeepsDeliveriesApart(t *testing.T) {
	var csv bytes.Buffer
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(10*time.Second)), nil)
	r.SetTimeline(TimelineOptions{Interval: 10 * time.Second, Grace: time.Second, CSV: &csv})
	r.Observe(obsAt(measure.IMAPConnect, time.Second, 10*time.Millisecond, false))
	r.Observe(obsAt(measure.DeliveryLocal, 2*time.Second, 3*time.Second, false))
	r.Observe(obsAt(measure.DeliveryRemote, 3*time.Second, 5*time.Second, true))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	p := r.Timeline()[0]
	if p.Operations != 1 || p.Errors != 0 || p.Max > 11*time.Millisecond {
		t.Errorf("protocol totals %+v include delivery times", p.Totals)
	}
	if d := p.Delivery; d.Operations != 2 || d.Errors != 1 || d.Max < 4900*time.Millisecond || d.P50 < 2900*time.Millisecond {
		t.Errorf("delivery totals %+v", d)
	}
	if len(p.Functions) != 3 || p.Functions[2].Function != measure.DeliveryRemote || p.Functions[2].Histogram == "" {
		t.Errorf("functions %+v", p.Functions)
	}
	got := csv.String()
	for _, line := range []string{"2026-03-01T12:00:00Z,measurement,ALL,1,0,", "2026-03-01T12:00:00Z,measurement,DELIVERY,2,1,"} {
		if !strings.Contains(got, "\n"+line) {
			t.Errorf("CSV lacks a line starting %q:\n%s", line, got)
		}
	}
}

// TestMergePointsExact: merging the points of two shards gives the figures
// of one recorder that saw every operation.
func TestMergePointsExact(t *testing.T) {
	w := window(tl0, tl0.Add(10*time.Second))
	rec := func() *Recorder {
		r := NewRecorder(defaultLimits(), w, nil)
		r.SetTimeline(TimelineOptions{Interval: 10 * time.Second, Grace: time.Second})
		return r
	}
	a, b, all := rec(), rec(), rec()
	for i := range 1000 {
		f := measure.AllFunctions[i%5]
		if i%7 == 0 {
			f = measure.DeliveryLocal
		}
		o := obsAt(f, time.Duration(i)*time.Millisecond, time.Duration(1+i*i%5000)*time.Millisecond, i%13 == 0)
		if i < 300 {
			a.Observe(o)
		} else {
			b.Observe(o)
		}
		all.Observe(o)
	}
	a.SessionsStarted(3, tl0)
	b.SessionsStarted(4, tl0)
	all.SessionsStarted(7, tl0)
	for _, r := range []*Recorder{a, b, all} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	got, exact, err := MergePoints(a.Timeline()[0], b.Timeline()[0])
	if err != nil || !exact {
		t.Fatalf("MergePoints: exact %v, %v", exact, err)
	}
	want := all.Timeline()[0]
	strip := func(p Point) Point {
		p.Functions = append([]FunctionPoint(nil), p.Functions...)
		for i := range p.Functions {
			h, err := DecodeHistogram(p.Functions[i].Histogram)
			if err != nil {
				t.Fatal(err)
			}
			if h.TotalCount() != p.Functions[i].Operations {
				t.Errorf("%s: histogram of %d values, %d operations", p.Functions[i].Function, h.TotalCount(), p.Functions[i].Operations)
			}
			p.Functions[i].Histogram = ""
		}
		return p
	}
	if g, w := strip(got), strip(want); !reflect.DeepEqual(g, w) {
		t.Errorf("merged point\n got %+v\nwant %+v", g, w)
	}

	// Without histograms (an older report): counts exact, percentiles the
	// largest of the points'.
	pa, pb := strip(a.Timeline()[0]), strip(b.Timeline()[0])
	got, exact, err = MergePoints(pa, pb)
	if err != nil || exact {
		t.Fatalf("MergePoints without histograms: exact %v, %v", exact, err)
	}
	if got.Operations != want.Operations || got.Delivery.Errors != want.Delivery.Errors || got.P95 != max(pa.P95, pb.P95) {
		t.Errorf("inexact merge %+v", got)
	}
}

// TestPointHistogramSize notes what the encoded histograms weigh: a
// function with 1000 operations of spread-out durations in a point.
func TestPointHistogramSize(t *testing.T) {
	h := NewHistogram()
	for i := range 1000 {
		RecordDuration(h, time.Duration(1+i*i%5000)*time.Millisecond)
	}
	s, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1000 values: %d bytes encoded; empty: %d bytes", len(s), len(emptyHistogram()))
	if len(s) > 4096 {
		t.Errorf("encoded histogram of 1000 values is %d bytes", len(s))
	}
}

// TestTimelineFirstPointNoHeapStep: a run's timeline allocates
// every histogram it needs in steady state before the measurement window's
// first point closes (a grace period into the window), so that the
// generator's heap does not step up in the middle of the window
// (bench/soak's BenchmarkSoakGenerator): closing the first point must not
// allocate summarize's two scratch histograms (2 × 184 KiB) then.
func TestTimelineFirstPointNoHeapStep(t *testing.T) {
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(60*time.Second)), nil)
	r.SetTimeline(TimelineOptions{Interval: 10 * time.Second, Grace: 5 * time.Second})
	r.Observe(obsAt(measure.IMAPConnect, -2*time.Second, 100*time.Millisecond, false)) // warm-up: the run starts
	r.Observe(obsAt(measure.IMAPConnect, 1*time.Second, 10*time.Millisecond, false))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r.Advance(tl0.Add(16 * time.Second)) // closes [0, 10s): the first point
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := len(r.Timeline()); n != 1 {
		t.Fatalf("%d points after Advance, want 1", n)
	}
	const histogram = 184 << 10
	// Live heap, not TotalAlloc: encoding a point's histograms makes
	// garbage (a copy of each one's counts), which is not growth.
	if got := int64(after.HeapAlloc) - int64(before.HeapAlloc); got >= histogram/2 {
		t.Errorf("closing the first point grew the live heap by %d B, a histogram's worth (%d B)", got, histogram)
	}
	runtime.KeepAlive(r)
}

// TestTimelineClients: each point keeps the clients' target, the fewest
// held at any sample in it and the drops in it (from a running total);
// samples outside the measurement window are not in a point, a sample
// after its point closed still counts, and MergePoints adds the shards'.
func TestTimelineClients(t *testing.T) {
	r := NewRecorder(defaultLimits(), window(tl0, tl0.Add(30*time.Second)), nil)
	r.SetTimeline(TimelineOptions{Interval: 10 * time.Second, Grace: 5 * time.Second})
	r.ClientsProgress(100, 40, 3, tl0.Add(-time.Second)) // warm-up: the ramp
	r.ClientsProgress(100, 100, 3, tl0.Add(time.Second))
	r.ClientsProgress(100, 97, 6, tl0.Add(4*time.Second)) // a dip: 3 dropped
	r.ClientsProgress(100, 100, 6, tl0.Add(9*time.Second))
	r.Observe(obsAt(measure.IMAPConnect, 15*time.Second, time.Second, false)) // closes [0, 10s)
	r.ClientsProgress(100, 99, 7, tl0.Add(12*time.Second))
	r.ClientsProgress(100, 99, 7, tl0.Add(31*time.Second)) // ramp-down
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	pts := r.Timeline()
	if len(pts) != 3 {
		t.Fatalf("%d points", len(pts))
	}
	want := []*ClientPoint{{Target: 100, Held: 97, Drops: 3}, {Target: 100, Held: 99, Drops: 1}, nil}
	for i, w := range want {
		if got := pts[i].Clients; (got == nil) != (w == nil) || got != nil && *got != *w {
			t.Errorf("point %d: clients %+v, want %+v", i, got, w)
		}
	}
	m, _, err := MergePoints(pts[0], pts[0], pts[2])
	if err != nil {
		t.Fatal(err)
	}
	if m.Clients == nil || *m.Clients != (ClientPoint{Target: 200, Held: 194, Drops: 6}) {
		t.Errorf("two shards' point merged: %+v", m.Clients)
	}
}
