package metrics

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// DefaultInterval is the length of a timeline interval when none is set.
const DefaultInterval = 10 * time.Second

// AutoPoints is about how many intervals AutoInterval gives a measurement
// window: enough for a chart's shape, few enough to read as a table.
const AutoPoints = 30

// niceIntervals are the interval lengths AutoInterval picks from: lengths
// a reader counts in.
var niceIntervals = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// AutoInterval is the timeline interval for a measurement window of
// length m: the shortest of niceIntervals that gives at most about
// AutoPoints intervals, at least one second. It doesn't perform I/O.
func AutoInterval(m time.Duration) time.Duration {
	for _, d := range niceIntervals {
		if m/d <= AutoPoints {
			return d
		}
	}
	return niceIntervals[len(niceIntervals)-1]
}

// MaxPoints bounds the measurement window's in-memory timeline: when the
// window holds more intervals than this, adjacent intervals are merged
// (exactly: their histograms are added before the percentiles are taken)
// into points of a whole number of intervals each, so that at most
// MaxPoints points are kept. The CSV stream always has one line per interval.
const MaxPoints = 720

// TimelineOptions configure the interval recorder of a Recorder.
type TimelineOptions struct {
	// Interval is the length of an interval; 0: DefaultInterval.
	Interval time.Duration
	// Grace is how long after an interval's end it stays open for
	// operations that started in it but end later (an operation is observed
	// when it ends). An interval closes once an operation has been observed
	// ending at least Grace after the interval's end, or at Advance or Close.
	// 0: 2 × Interval + 30 s. Set it above the operation timeout.
	Grace time.Duration
	// CSV, when non-nil, receives one line per closed interval and function
	// (see TimeseriesHeader), flushed as each interval closes. If it is an
	// io.Closer, Recorder.Close closes it.
	CSV io.Writer
}

// TimeseriesHeader is the first line of the --timeseries CSV. Each further
// line is one closed interval and one function: the interval's start
// (RFC 3339, UTC), the phase it lies in, the function (AllFunctionsLabel for
// the protocol operations together; that line is written for every interval
// of the measurement window, even one without operations; DeliveryLabel for
// the delivery times together), the operations that STARTED in the interval,
// how many of them failed, and the 50th, 95th and 99th percentile and the
// maximum of their durations in milliseconds.
const TimeseriesHeader = "interval_start,phase,function,operations,errors,p50_ms,p95_ms,p99_ms,max_ms"

// AllFunctionsLabel is the function column of a CSV line that sums the
// protocol operations (every function but the delivery times) of an
// interval.
const AllFunctionsLabel = "ALL"

// DeliveryLabel is the function column of a CSV line that sums the delivery
// times (measure.DeliveryLocal and DeliveryRemote) of an interval; it is
// written only for intervals with deliveries.
const DeliveryLabel = "DELIVERY"

// IsDelivery reports whether f is a delivery time rather than a protocol
// operation: the timeline's totals keep the two apart.
func IsDelivery(f measure.Function) bool { return measure.IsDelivery(f) }

// Totals are a number of operations, how many failed, and the percentiles
// and maximum of their durations (zero without operations).
type Totals struct {
	Operations, Errors int64
	P50, P95, P99, Max time.Duration
}

// FunctionPoint is one function's figures over one timeline point.
type FunctionPoint struct {
	Function measure.Function
	Totals
	// Histogram holds the durations of the function's operations in the
	// point that are in its percentiles (late ones are not), encoded
	// (EncodeHistogram), so that points merge exactly (MergePoints). It is
	// "" in points read from a report written before it was stored.
	Histogram string
}

// Point is one point of the measurement window's timeline: one interval,
// or several adjacent ones merged (see MaxPoints). The report holds these
// as they are (report.Run.Timeline).
type Point struct {
	Start    time.Time
	Length   time.Duration
	Sessions int64 // sessions started (see Recorder.SessionsStarted)
	// Totals (Operations, Errors and the percentiles) are over the protocol
	// operations: every function but the delivery times.
	Totals
	// Delivery is over the delivery times (IsDelivery) together.
	Delivery Totals
	// Late counts operations observed after their point had closed: they
	// are in the counts (of Totals or Delivery, and of their function) but
	// not in the percentiles nor the histograms.
	Late      int64
	Functions []FunctionPoint // functions with operations, in measure.AllFunctions order, then others by name
	// Clients is the connected population in the point (nil: none, or not
	// sampled in it; see Recorder.ClientsProgress).
	Clients *ClientPoint
}

// ClientPoint is the connected clients of [clients] over one point: how
// many the run aimed to hold, the fewest it held at any sample in the
// point (a dip shows), and the connections lost in it.
type ClientPoint struct {
	Target int64 `json:"target"`
	Held   int64 `json:"held"`
	Drops  int64 `json:"drops"`
}

// acc accumulates one function's operations in an open interval or point.
type acc struct {
	ops, errs int64
	// The durations: in sparse while it holds them (an open interval's
	// usual few hundred buckets), then in h, a dense histogram from the
	// timeline's free list; h is nil until then. Both count exactly.
	sparse sparseDurations
	h      *hdrhistogram.Histogram
}

// record counts the duration d.
func (a *acc) record(d time.Duration, t *timeline) {
	if a.h == nil && a.sparse.record(d) {
		return
	}
	RecordDuration(a.dense(t), d)
}

// dense returns a's durations as a histogram: h, made from the sparse
// counts the first time.
func (a *acc) dense(t *timeline) *hdrhistogram.Histogram {
	if a.h == nil {
		a.h = t.histogram()
		a.sparse.foldInto(a.h)
	}
	return a.h
}

// span is an open interval (slot) or the point being accumulated.
type span struct {
	slot int64
	fns  map[measure.Function]*acc
}

// timeline is the interval metrics. Its methods are called with Recorder's
// tmu held.
//
// Slots: interval k covers [measureStart + k·d, measureStart + (k+1)·d),
// cut at the phase boundaries so that each slot lies in one phase. Slot s
// is interval s for s < n (warm-up: s < 0; measurement: 0 ≤ s < n, the last
// one ending at measureEnd); ramp-down slots follow, the first starting at
// measureEnd.
type timeline struct {
	d, grace     time.Duration
	mS, mE       time.Time
	n            int64 // measurement slots
	aligned      bool  // measureEnd is on an interval boundary
	factor       int64 // measurement slots per point
	started      bool
	closedThru   int64 // the last closed slot
	watermark    time.Time
	open         []*span // by slot, ascending
	point        *span   // the point being accumulated (measurement), or nil
	pointStart   int64   // its first slot
	points       []Point
	sessions     map[int64]int64        // sessions started per point index, until the point closes
	clients      map[int64]*ClientPoint // the clients per point index, until the point closes
	dropsSeen    int64
	free         []*hdrhistogram.Histogram
	csv          *bufio.Writer
	csvErr       error
	scratch      *hdrhistogram.Histogram // summarize's protocol operations
	scratchDlv   *hdrhistogram.Histogram // summarize's delivery times
	scratchFn    *hdrhistogram.Histogram // summarize's view of one function still counted sparsely
	encoder      *histogramEncoder       // summarize's (a zlib writer, ~1 MB: one per timeline, not one per call)
	knownOrder   map[measure.Function]int
	observedLate int64 // operations observed after their slot closed (all phases)
	sessionsSeen int64
}

func newTimeline(start, end time.Time, o TimelineOptions) *timeline {
	d := o.Interval
	if d <= 0 {
		d = DefaultInterval
	}
	grace := o.Grace
	if grace <= 0 {
		grace = 2*d + 30*time.Second
	}
	t := &timeline{d: d, grace: grace, mS: start, mE: end, sessions: map[int64]int64{}, clients: map[int64]*ClientPoint{}, knownOrder: map[measure.Function]int{}}
	win := end.Sub(start)
	if win > 0 {
		t.n = int64((win + d - 1) / d)
		t.aligned = win%d == 0
	}
	t.factor = max(1, (t.n+MaxPoints-1)/MaxPoints)
	for i, f := range measure.AllFunctions {
		t.knownOrder[f] = i
	}
	if o.CSV != nil {
		t.csv = bufio.NewWriterSize(o.CSV, 16<<10)
		_, t.csvErr = fmt.Fprintln(t.csv, TimeseriesHeader)
		if t.csvErr == nil {
			t.csvErr = t.csv.Flush()
		}
	}
	return t
}

// floorDiv is a/b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// slotOf returns the slot of an operation that started at t.
func (t *timeline) slotOf(at time.Time) int64 {
	k := floorDiv(int64(at.Sub(t.mS)), int64(t.d))
	switch {
	case at.Before(t.mE):
		return k // warm-up (k < 0) or measurement
	case t.aligned:
		return max(k, t.n)
	default:
		return max(k+1, t.n) // the first ramp-down slot is the tail of interval n-1
	}
}

// slotBounds returns the start and end of slot s.
func (t *timeline) slotBounds(s int64) (time.Time, time.Time) {
	at := func(k int64) time.Time { return t.mS.Add(time.Duration(k) * t.d) }
	switch {
	case s < t.n-1 || s == t.n-1 && t.aligned:
		return at(s), at(s + 1)
	case s == t.n-1:
		return at(s), t.mE
	case t.aligned:
		return at(s), at(s + 1)
	case s == t.n:
		return t.mE, at(s)
	default:
		return at(s - 1), at(s)
	}
}

func (t *timeline) phaseOf(s int64) workload.Phase {
	switch {
	case s < 0:
		return workload.Warmup
	case s < t.n:
		return workload.Measurement
	default:
		return workload.Rampdown
	}
}

func (t *timeline) histogram() *hdrhistogram.Histogram {
	if n := len(t.free); n > 0 {
		h := t.free[n-1]
		t.free = t.free[:n-1]
		return h
	}
	return NewHistogram()
}

func (t *timeline) release(s *span) {
	for f, a := range s.fns {
		if a.h != nil {
			a.h.Reset()
			t.free = append(t.free, a.h)
		}
		delete(s.fns, f)
	}
}

func (s *span) acc(f measure.Function, t *timeline) *acc {
	a := s.fns[f]
	if a == nil {
		a = &acc{}
		s.fns[f] = a
	}
	return a
}

// observe records o. It doesn't perform I/O except on closing intervals
// (the CSV stream).
func (t *timeline) observe(o measure.Observation) {
	s := t.slotOf(o.Start)
	if !t.started {
		t.started = true
		t.closedThru = min(s, 0) - 1
		// summarize's two histograms (184 KiB each) and encoder (~1 MB), here rather than at
		// the first point, which closes a grace period into the
		// measurement window: a run's heap then steps up in the middle of
		// the window, which bench/soak's flatness check took for growth.
		t.prepareSummary()
	}
	if s > t.closedThru {
		sp := t.openSpan(s)
		a := sp.acc(o.Function, t)
		a.ops++
		if o.Class != measure.OK {
			a.errs++
		}
		a.record(o.Duration, t)
	} else {
		t.late(s, o)
	}
	if end := o.Start.Add(o.Duration); end.After(t.watermark) {
		t.advance(end)
	}
}

// late counts an operation whose slot has closed: in its point when that
// point is still kept, exactly in the counts and not in the percentiles.
func (t *timeline) late(s int64, o measure.Observation) {
	t.observedLate++
	if s < 0 || s >= t.n {
		return
	}
	j := s / t.factor
	if t.point != nil && t.pointStart/t.factor == j {
		a := t.point.acc(o.Function, t) // still accumulating: exact
		a.ops++
		if o.Class != measure.OK {
			a.errs++
		}
		a.record(o.Duration, t)
		return
	}
	if j >= int64(len(t.points)) {
		return
	}
	p := &t.points[j]
	p.Late++
	failed := int64(0)
	if o.Class != measure.OK {
		failed = 1
	}
	tot := &p.Totals
	if IsDelivery(o.Function) {
		tot = &p.Delivery
	}
	tot.Operations++
	tot.Errors += failed
	for i := range p.Functions {
		if fp := &p.Functions[i]; fp.Function == o.Function {
			fp.Operations++
			fp.Errors += failed
			return
		}
	}
	p.Functions = append(p.Functions, FunctionPoint{Function: o.Function, Totals: Totals{Operations: 1, Errors: failed}, Histogram: emptyHistogram()})
}

func (t *timeline) openSpan(s int64) *span {
	i := len(t.open)
	for i > 0 && t.open[i-1].slot >= s {
		if t.open[i-1].slot == s {
			return t.open[i-1]
		}
		i--
	}
	sp := &span{slot: s, fns: map[measure.Function]*acc{}}
	t.open = append(t.open, nil)
	copy(t.open[i+1:], t.open[i:])
	t.open[i] = sp
	return sp
}

// nextSlot returns the next slot to close: every slot of the measurement
// window in turn (empty ones too), and outside it only the open ones.
func (t *timeline) nextSlot() (int64, bool) {
	c := t.closedThru + 1
	if c >= 0 && c < t.n {
		return c, true
	}
	if len(t.open) > 0 && (c >= t.n || t.open[0].slot < 0 || t.n == 0) {
		return t.open[0].slot, true
	}
	if c < 0 && t.n > 0 {
		return 0, true
	}
	return 0, false
}

// advance closes, in order, every slot that ended at least grace before now.
func (t *timeline) advance(now time.Time) {
	if now.After(t.watermark) {
		t.watermark = now
	}
	if !t.started {
		return
	}
	for {
		s, ok := t.nextSlot()
		if !ok {
			return
		}
		if _, end := t.slotBounds(s); t.watermark.Sub(end) < t.grace {
			return
		}
		t.closeSlot(s)
	}
}

// closeSlot closes slot s (and every slot before it) in order.
func (t *timeline) closeSlot(s int64) {
	var sp *span
	if len(t.open) > 0 && t.open[0].slot == s {
		sp = t.open[0]
		t.open = t.open[1:]
	} else {
		sp = &span{slot: s, fns: map[measure.Function]*acc{}}
	}
	t.closedThru = s
	t.writeCSV(sp)
	if t.phaseOf(s) == workload.Measurement && t.factor == 1 { // the slot is the point
		t.point, t.pointStart = sp, s
		t.finishPoint()
		return
	}
	if t.phaseOf(s) == workload.Measurement {
		if t.point != nil && t.pointStart/t.factor != s/t.factor {
			t.finishPoint()
		}
		if t.point == nil {
			t.point = &span{slot: s, fns: map[measure.Function]*acc{}}
			t.pointStart = s
		}
		for f, a := range sp.fns {
			pa := t.point.acc(f, t)
			pa.ops += a.ops
			pa.errs += a.errs
			if a.h != nil {
				pa.dense(t).Merge(a.h)
			} else { // still sparse: folded straight in, no dense histogram for it
				a.sparse.foldInto(pa.dense(t))
			}
		}
		if (s+1)%t.factor == 0 || s == t.n-1 {
			t.finishPoint()
		}
	}
	t.release(sp)
}

// finishPoint turns the accumulated point into a Point.
func (t *timeline) finishPoint() {
	j := t.pointStart / t.factor
	first := j * t.factor
	last := min(first+t.factor, t.n) - 1
	start, _ := t.slotBounds(first)
	_, end := t.slotBounds(last)
	for int64(len(t.points)) < j { // points of which no slot was ever closed
		ps, _ := t.slotBounds(int64(len(t.points)) * t.factor)
		t.points = append(t.points, Point{Start: ps, Length: time.Duration(t.factor) * t.d})
	}
	p := Point{Start: start, Length: end.Sub(start), Sessions: t.sessions[j], Clients: t.clients[j]}
	delete(t.sessions, j)
	delete(t.clients, j)
	p.Functions, p.Totals, p.Delivery = t.summarize(t.point, true)
	t.points = append(t.points, p)
	t.release(t.point)
	t.point = nil
}

// prepareSummary makes summarize's scratch histograms and encoder, once.
func (t *timeline) prepareSummary() {
	if t.scratch == nil {
		t.scratch, t.scratchDlv, t.scratchFn = NewHistogram(), NewHistogram(), NewHistogram()
		t.encoder = newHistogramEncoder()
	}
}

// summarize returns the per-function figures of sp (with their encoded
// histograms when encode is set) and the totals over its protocol
// operations and over its delivery times.
func (t *timeline) summarize(sp *span, encode bool) (fps []FunctionPoint, proto, dlv Totals) {
	t.prepareSummary()
	all, dh := t.scratch, t.scratchDlv
	all.Reset()
	dh.Reset()
	for _, f := range sortedFunctions(sp.fns, t.knownOrder) {
		a := sp.fns[f]
		if a.ops == 0 {
			continue
		}
		// A sparse function is summed in scratchFn and stays sparse: a
		// dense histogram per function here would step the heap up at the
		// first point (TestTimelineFirstPointNoHeapStep), and the counts
		// may still be merged into a point after the CSV line.
		ah := a.h
		if ah == nil {
			ah = t.scratchFn
			ah.Reset()
			a.sparse.addTo(ah)
		}
		fp := FunctionPoint{Function: f, Totals: totalsOf(a.ops, a.errs, ah)}
		if encode {
			fp.Histogram, _ = t.encoder.encode(ah) // cannot fail for mailbench's geometry
		}
		fps = append(fps, fp)
		tot, h := &proto, all
		if IsDelivery(f) {
			tot, h = &dlv, dh
		}
		tot.Operations += a.ops
		tot.Errors += a.errs
		h.Merge(ah)
	}
	proto = totalsOf(proto.Operations, proto.Errors, all)
	dlv = totalsOf(dlv.Operations, dlv.Errors, dh)
	return
}

// totalsOf returns ops and errs with the percentiles of h (zero when h is
// empty).
func totalsOf(ops, errs int64, h *hdrhistogram.Histogram) Totals {
	t := Totals{Operations: ops, Errors: errs}
	if h.TotalCount() > 0 {
		us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
		t.P50, t.P95, t.P99, t.Max = us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(95)), us(h.ValueAtQuantile(99)), us(h.Max())
	}
	return t
}

func sortedFunctions(m map[measure.Function]*acc, order map[measure.Function]int) []measure.Function {
	out := make([]measure.Function, 0, len(m))
	for f := range m {
		out = append(out, f)
	}
	rank := func(f measure.Function) int {
		if i, ok := order[f]; ok {
			return i
		}
		return len(order)
	}
	// Insertion sort: at most a few dozen functions.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0; j-- {
			a, b := out[j-1], out[j]
			if ra, rb := rank(a), rank(b); ra < rb || ra == rb && a <= b {
				break
			}
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond))
}

func (t *timeline) writeCSV(sp *span) {
	if t.csv == nil || t.csvErr != nil {
		return
	}
	phase := t.phaseOf(sp.slot)
	fps, proto, dlv := t.summarize(sp, false)
	if proto.Operations == 0 && dlv.Operations == 0 && phase != workload.Measurement {
		return
	}
	start, _ := t.slotBounds(sp.slot)
	ts := start.UTC().Format(time.RFC3339Nano)
	line := func(label string, v Totals) {
		fmt.Fprintf(t.csv, "%s,%s,%s,%d,%d,%s,%s,%s,%s\n", ts, phase, label, v.Operations, v.Errors, ms(v.P50), ms(v.P95), ms(v.P99), ms(v.Max))
	}
	for _, fp := range fps {
		line(fmt.Sprintf("%q", fp.Function), fp.Totals)
	}
	if proto.Operations > 0 || phase == workload.Measurement {
		line(AllFunctionsLabel, proto)
	}
	if dlv.Operations > 0 {
		line(DeliveryLabel, dlv)
	}
	t.csvErr = t.csv.Flush()
}

// closeAll closes every slot still open and the rest of the measurement
// window, in order.
func (t *timeline) closeAll() {
	if !t.started {
		return
	}
	for {
		s, ok := t.nextSlot()
		if !ok {
			break
		}
		t.closeSlot(s)
	}
	if t.point != nil {
		t.finishPoint()
	}
}

// sessionProgress attributes the sessions started since the last call
// (started is a running total) to the point containing at, clamped into
// the measurement window.
func (t *timeline) sessionProgress(started int64, at time.Time) {
	n := started - t.sessionsSeen
	if n <= 0 || t.n == 0 {
		return
	}
	t.sessionsSeen = started
	if at.Before(t.mS) {
		at = t.mS
	}
	s := min(t.slotOf(at), t.n-1)
	j := s / t.factor
	if j < int64(len(t.points)) {
		t.points[j].Sessions += n
		return
	}
	t.sessions[j] += n
}

// clientsProgress adds a sample of the connected clients (drops a running
// total) to the point containing at; samples outside the measurement
// window are not in the timeline (its drops count from the window's first
// sample).
func (t *timeline) clientsProgress(target, held, drops int64, at time.Time) {
	if t.n == 0 || at.Before(t.mS) || !at.Before(t.mE) {
		t.dropsSeen = drops
		return
	}
	n := drops - t.dropsSeen
	t.dropsSeen = drops
	j := min(t.slotOf(at), t.n-1) / t.factor
	c := t.clients[j]
	if j < int64(len(t.points)) {
		c = t.points[j].Clients
	}
	if c == nil {
		c = &ClientPoint{Target: target, Held: held}
		if j < int64(len(t.points)) {
			t.points[j].Clients = c
		} else {
			t.clients[j] = c
		}
	}
	c.Target, c.Held, c.Drops = max(c.Target, target), min(c.Held, held), c.Drops+max(n, 0)
}

// SetTimeline replaces the interval recorder (New sets one with the
// default options and no stream). Call it before the first Observe.
func (r *Recorder) SetTimeline(o TimelineOptions) {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	r.tl = newTimeline(r.window.MeasureStart, r.window.MeasureEnd, o)
	r.tlCloser = nil
	if c, ok := o.CSV.(io.Closer); ok {
		r.tlCloser = c
	}
}

// Advance closes the intervals that ended at least the grace period before
// now (writing their CSV lines), as an observation ending at now would. Call
// it now and then (the manager does, once a second) so that intervals close
// even when no operation ends. It is safe for concurrent use.
//
// Advance also flushes the per-operation stream once per interval, so that
// a killed run loses at most the last interval of it.
func (r *Recorder) Advance(now time.Time) {
	r.tmu.Lock()
	r.tl.advance(now)
	every := r.tl.d
	r.tmu.Unlock()
	r.mu.Lock()
	if r.stream != nil && r.werr == nil && now.Sub(r.flushed) >= every {
		r.flushed = now
		r.werr = r.stream.Flush() // kept, and returned by Close
	}
	r.mu.Unlock()
}

// SessionsStarted tells the timeline that started sessions of the
// measurement window have started so far (a running total, e.g.
// session.RunProgress.Sessions.Started), as of at: the sessions since the
// previous call count in the point containing at (clamped into the
// measurement window), so a point's Sessions is exact to the period of the
// calls. It is safe for concurrent use.
func (r *Recorder) SessionsStarted(started int64, at time.Time) {
	r.tmu.Lock()
	r.tl.sessionProgress(started, at)
	r.tmu.Unlock()
}

// ClientsProgress samples the connected population of [clients]: the
// target, how many are connected now and the connections lost so far (a
// running total), as of at. Each point keeps its target, the fewest held
// at any of its samples, and the drops in it. It is safe for concurrent
// use.
func (r *Recorder) ClientsProgress(target, held, drops int64, at time.Time) {
	r.tmu.Lock()
	r.tl.clientsProgress(target, held, drops, at)
	r.tmu.Unlock()
}

// Timeline returns a copy of the measurement window's closed points, in
// time order; after Close, every point of the window (at most MaxPoints).
// It is safe for concurrent use.
func (r *Recorder) Timeline() []Point {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	out := make([]Point, len(r.tl.points))
	for i, p := range r.tl.points {
		p.Functions = append([]FunctionPoint(nil), p.Functions...)
		if p.Clients != nil {
			c := *p.Clients
			p.Clients = &c
		}
		out[i] = p
	}
	return out
}

// LateObservations is the number of operations observed after their
// interval had closed (they are missing from the CSV stream; see Point.Late).
func (r *Recorder) LateObservations() int64 {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	return r.tl.observedLate
}

// closeTimeline closes every interval, flushes and closes the CSV stream.
func (r *Recorder) closeTimeline() error {
	r.tmu.Lock()
	defer r.tmu.Unlock()
	if r.tlClosed {
		return nil
	}
	r.tlClosed = true
	r.tl.closeAll()
	err := r.tl.csvErr
	if r.tl.csv != nil && err == nil {
		err = r.tl.csv.Flush()
	}
	if r.tlCloser != nil {
		if cerr := r.tlCloser.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("timeseries: %w", err)
	}
	return nil
}

// emptyHistogram is an empty histogram, encoded: that of a function whose
// operations in a point were all late.
var emptyHistogram = sync.OnceValue(func() string {
	s, _ := EncodeHistogram(NewHistogram())
	return s
})

// MergePoints returns one point holding the operations of ps — the same
// interval of several shards of one run, or adjacent points of one
// timeline: sessions, late operations, the connected clients (target,
// held and drops: the shards' sum) and every count added, each
// function's histograms merged, and every percentile (of a function, of the
// protocol operations, of the delivery times) taken from the merged
// histograms, so that it is exact. Start is the earliest start and Length
// the longest length of ps; callers that merge adjacent points set them.
//
// exact is false when a function with operations in some point has no
// histogram (a point read from a report written before they were stored):
// then the merged point has no histogram of that function, and its
// percentiles, and those of the totals it is part of, are the largest of
// the points' — an upper bound, since the percentile of a union lies between
// the parts' smallest and largest. err is not nil when a histogram does not
// decode (DecodeHistogram) or holds more values than its operations.
//
// It decodes one histogram at a time into an accumulator per function, so
// its memory does not grow with len(ps).
func MergePoints(ps ...Point) (p Point, exact bool, err error) {
	type facc struct {
		tot     Totals
		h       *hdrhistogram.Histogram
		inexact bool
	}
	fns := map[measure.Function]*facc{}
	order := map[measure.Function]int{}
	for i, f := range measure.AllFunctions {
		order[f] = i
	}
	exact = true
	for i, q := range ps {
		if i == 0 || q.Start.Before(p.Start) {
			p.Start = q.Start
		}
		p.Length = max(p.Length, q.Length)
		p.Sessions += q.Sessions
		p.Late += q.Late
		if c := q.Clients; c != nil {
			if p.Clients == nil {
				p.Clients = &ClientPoint{}
			}
			p.Clients.Target += c.Target
			p.Clients.Held += c.Held
			p.Clients.Drops += c.Drops
		}
		for _, fp := range q.Functions {
			a := fns[fp.Function]
			if a == nil {
				a = &facc{tot: Totals{}, h: NewHistogram()}
				fns[fp.Function] = a
			}
			a.tot.Operations += fp.Operations
			a.tot.Errors += fp.Errors
			if fp.Histogram == "" {
				if fp.Operations > 0 {
					a.inexact, exact = true, false
				}
				a.tot.P50, a.tot.P95 = max(a.tot.P50, fp.P50), max(a.tot.P95, fp.P95)
				a.tot.P99, a.tot.Max = max(a.tot.P99, fp.P99), max(a.tot.Max, fp.Max)
				continue
			}
			h, err := DecodeHistogram(fp.Histogram)
			if err != nil {
				return Point{}, false, fmt.Errorf("%s: %w", fp.Function, err)
			}
			if h.TotalCount() > fp.Operations {
				return Point{}, false, fmt.Errorf("%s: histogram holds %d values, more than its %d operations", fp.Function, h.TotalCount(), fp.Operations)
			}
			a.h.Merge(h)
		}
	}
	if !exact {
		// The totals' upper bound: the largest of the points' own.
		for _, q := range ps {
			for _, pair := range [][2]*Totals{{&p.Totals, &q.Totals}, {&p.Delivery, &q.Delivery}} {
				d, s := pair[0], pair[1]
				d.P50, d.P95, d.P99, d.Max = max(d.P50, s.P50), max(d.P95, s.P95), max(d.P99, s.P99), max(d.Max, s.Max)
			}
		}
	}
	all, dh := NewHistogram(), NewHistogram()
	m := make(map[measure.Function]*acc, len(fns))
	for f := range fns {
		m[f] = nil
	}
	for _, f := range sortedFunctions(m, order) {
		a := fns[f]
		fp := FunctionPoint{Function: f, Totals: a.tot}
		if !a.inexact {
			fp.Totals = totalsOf(a.tot.Operations, a.tot.Errors, a.h)
			if fp.Histogram, err = EncodeHistogram(a.h); err != nil {
				return Point{}, false, err
			}
		}
		p.Functions = append(p.Functions, fp)
		tot, h := &p.Totals, all
		if IsDelivery(f) {
			tot, h = &p.Delivery, dh
		}
		tot.Operations += a.tot.Operations
		tot.Errors += a.tot.Errors
		h.Merge(a.h)
	}
	if exact {
		p.Totals = totalsOf(p.Operations, p.Errors, all)
		p.Delivery = totalsOf(p.Delivery.Operations, p.Delivery.Errors, dh)
	}
	return p, exact, nil
}

// CheckEncodedHistogram checks, without decoding its counts, that s is no
// longer than MaxEncodedHistogram and holds a histogram of mailbench's
// geometry: what a reader of untrusted reports can afford for many small
// histograms (MergePoints decodes them fully).
func CheckEncodedHistogram(s string) error {
	if len(s) > MaxEncodedHistogram {
		return fmt.Errorf("histogram: %d bytes, more than %d", len(s), MaxEncodedHistogram)
	}
	if err := checkEncodedGeometry(s); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	return nil
}
