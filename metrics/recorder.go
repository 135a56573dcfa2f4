// This file routes timed operations to the statistics of the phase
// they started in, and streams one record per operation to disk.
//
// Memory is bounded: a Recorder keeps exact counters and an HDR histogram per
// function and phase (in Stats) and a few sample error messages,
// never per-operation samples.

package metrics

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// maxSamples bounds the sample error messages kept per function and class.
const maxSamples = 3

// Recorder is a measure.Observer. It is safe for concurrent use.
type Recorder struct {
	window  workload.Window
	byPhase map[workload.Phase]*Stats

	mu      sync.Mutex
	samples map[sampleKey][]string
	stream  *bufio.Writer
	closer  io.Closer
	werr    error
	// flushed is when the per-operation stream was last flushed (Advance
	// flushes it once per timeline interval; the timeline's CSV is flushed
	// as each interval closes).
	flushed time.Time

	// The interval recorder (timeline.go), behind its own mutex.
	tmu      sync.Mutex
	tl       *timeline
	tlCloser io.Closer
	tlClosed bool
}

type sampleKey struct {
	f measure.Function
	c measure.ErrorClass
}

// NewRecorder returns a Recorder for a run whose timeline is window, counting
// each function's operations within its limit in limits. When w is
// non-nil every observation is also written to it as a CSV line (see
// WriteHeader); if w is an io.Closer, Close closes it. It also keeps a
// timeline of DefaultInterval intervals without a stream; SetTimeline
// changes that.
func NewRecorder(limits map[measure.Function]time.Duration, window workload.Window, w io.Writer) *Recorder {
	r := &Recorder{
		window: window,
		byPhase: map[workload.Phase]*Stats{
			workload.Warmup: NewStats(limits), workload.Measurement: NewStats(limits), workload.Rampdown: NewStats(limits),
		},
		samples: map[sampleKey][]string{},
	}
	r.tl = newTimeline(window.MeasureStart, window.MeasureEnd, TimelineOptions{})
	if w != nil {
		r.stream = bufio.NewWriterSize(w, 64<<10)
		if c, ok := w.(io.Closer); ok {
			r.closer = c
		}
		fmt.Fprintln(r.stream, "start_unix_ns,phase,function,duration_us,error_class")
	}
	return r
}

// PhaseOf returns the phase of an operation that started at t.
func (r *Recorder) PhaseOf(t time.Time) workload.Phase { return r.window.PhaseAt(t) }

// Observe records o in the statistics of the phase it started in.
func (r *Recorder) Observe(o measure.Observation) {
	p := r.PhaseOf(o.Start)
	r.byPhase[p].Observe(o)
	if o.Class != measure.Cancelled { // mailbench's own cut: no operation of the server
		r.tmu.Lock()
		r.tl.observe(o)
		r.tmu.Unlock()
	}
	if (o.Class == measure.OK || o.Class == measure.Cancelled) && r.stream == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o.Class != measure.OK && o.Class != measure.Cancelled && o.Err != nil {
		k := sampleKey{o.Function, o.Class}
		if len(r.samples[k]) < maxSamples {
			msg := o.Err.Error()
			if why := measure.TLSReason(o.Err); why != "" && o.Class == measure.TLS {
				msg = why + ": " + msg
			}
			r.samples[k] = append(r.samples[k], msg)
		}
	}
	if r.stream != nil && r.werr == nil {
		_, r.werr = fmt.Fprintf(r.stream, "%d,%s,%q,%d,%s\n", o.Start.UnixNano(), p, o.Function, o.Duration.Microseconds(), o.Class)
	}
}

// Stats returns the statistics of phase p (live; use Snapshot to copy).
func (r *Recorder) Stats(p workload.Phase) *Stats { return r.byPhase[p] }

// ErrorSamples returns up to a few error messages per function and class,
// formatted "function [class]: message".
func (r *Recorder) ErrorSamples() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range measure.AllFunctions {
		for _, c := range measure.ErrorClasses {
			for _, m := range r.samples[sampleKey{f, c}] {
				out = append(out, fmt.Sprintf("%s [%s]: %s", f, c, m))
			}
		}
	}
	return out
}

// Flush writes what the per-operation stream has buffered, without
// closing it: a run that fails keeps everything it recorded.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream == nil {
		return nil
	}
	return r.stream.Flush()
}

// Close closes every interval of the timeline (writing its CSV lines),
// flushes and closes the streams. Observations after Close count as late.
func (r *Recorder) Close() error {
	terr := r.closeTimeline()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream == nil {
		return terr
	}
	err := r.stream.Flush()
	if r.closer != nil {
		if cerr := r.closer.Close(); err == nil {
			err = cerr
		}
	}
	if r.werr != nil {
		err = r.werr
	}
	if err == nil {
		err = terr
	}
	return err
}
