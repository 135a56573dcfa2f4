package metrics

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

var (
	measureStart = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	measureEnd   = measureStart.Add(10 * time.Minute)
)

// closeBuffer is a stream that records whether it was closed.
type closeBuffer struct {
	bytes.Buffer
	closed   bool
	closeErr error
}

func (b *closeBuffer) Close() error { b.closed = true; return b.closeErr }

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func ops(s *Stats, f measure.Function) int64 {
	if fs := s.Snapshot()[f]; fs != nil {
		return fs.Operations
	}
	return 0
}

func TestPhaseBoundaries(t *testing.T) {
	tests := []struct {
		name  string
		start time.Time
		want  workload.Phase
	}{
		{"long before", measureStart.Add(-time.Hour), workload.Warmup},
		{"just before start", measureStart.Add(-time.Nanosecond), workload.Warmup},
		{"at start", measureStart, workload.Measurement},
		{"inside", measureStart.Add(5 * time.Minute), workload.Measurement},
		{"just before end", measureEnd.Add(-time.Nanosecond), workload.Measurement},
		{"at end", measureEnd, workload.Rampdown},
		{"after end", measureEnd.Add(time.Minute), workload.Rampdown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder(defaultLimits(), window(measureStart, measureEnd), nil)
			if got := r.PhaseOf(tt.start); got != tt.want {
				t.Errorf("PhaseOf = %q, want %q", got, tt.want)
			}
			// An operation that starts in a phase and ends in the next is
			// counted where it started.
			r.Observe(measure.Observation{Function: measure.IMAPList, Start: tt.start, Duration: 20 * time.Minute})
			for _, p := range []workload.Phase{workload.Warmup, workload.Measurement, workload.Rampdown} {
				want := int64(0)
				if p == tt.want {
					want = 1
				}
				if got := ops(r.Stats(p), measure.IMAPList); got != want {
					t.Errorf("phase %s: %d operations, want %d", p, got, want)
				}
			}
		})
	}
}

func TestErrorSamplesBounded(t *testing.T) {
	r := NewRecorder(defaultLimits(), window(measureStart, measureEnd), nil)
	at := measureStart.Add(time.Second)
	for i := 0; i < maxSamples+5; i++ {
		r.Observe(measure.Observation{Function: measure.IMAPAppend, Start: at, Class: measure.Timeout, Err: fmt.Errorf("append timeout %d", i)})
		r.Observe(measure.Observation{Function: measure.IMAPAppend, Start: at, Class: measure.Protocol, Err: fmt.Errorf("append NO %d", i)})
		r.Observe(measure.Observation{Function: measure.SMTPData, Start: at, Class: measure.Timeout, Err: fmt.Errorf("data timeout %d", i)})
	}
	// Successes and failures without an error add no sample.
	r.Observe(measure.Observation{Function: measure.IMAPList, Start: at})
	r.Observe(measure.Observation{Function: measure.IMAPList, Start: at, Class: measure.Other})

	count := map[string]int{}
	for _, s := range r.ErrorSamples() {
		key := s[:strings.Index(s, "]")+1]
		count[key]++
	}
	want := map[string]int{
		"IMAP APPEND [timeout]":  maxSamples,
		"IMAP APPEND [protocol]": maxSamples,
		"SMTP Data [timeout]":    maxSamples,
	}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("samples per function and class %v, want %v", count, want)
	}
	// The first ones are kept, formatted "function [class]: message".
	if s := r.ErrorSamples(); len(s) == 0 || s[0] != "SMTP Data [timeout]: data timeout 0" {
		t.Errorf("first sample %q, want the first SMTP Data timeout", s)
	}
	// Every failure is still counted.
	if fs := r.Stats(workload.Measurement).Snapshot()[measure.IMAPAppend]; fs.Operations != 2*(maxSamples+5) {
		t.Errorf("%d APPEND operations counted, want %d", fs.Operations, 2*(maxSamples+5))
	}
}

func TestStream(t *testing.T) {
	var out closeBuffer
	r := NewRecorder(defaultLimits(), window(measureStart, measureEnd), &out)
	obs := []measure.Observation{
		{Function: measure.SMTPConnect, Start: measureStart.Add(-time.Second), Duration: 1500 * time.Microsecond},
		{Function: measure.IMAPFetchRange, Start: measureStart, Duration: 2 * time.Millisecond, Class: measure.Timeout, Err: measure.ErrTimeout},
		{Function: measure.DeliveryLocal, Start: measureEnd, Duration: 3 * time.Second, Class: measure.Integrity, Err: &measure.IntegrityError{Detail: "x"}},
	}
	for _, o := range obs {
		r.Observe(o)
	}
	if out.Len() != 0 {
		t.Errorf("%d bytes written before Close; the stream should be buffered", out.Len())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !out.closed {
		t.Error("Close did not close the stream")
	}
	records, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatalf("stream is not CSV: %v\n%s", err, out.String())
	}
	header := []string{"start_unix_ns", "phase", "function", "duration_us", "error_class"}
	if len(records) != len(obs)+1 || strings.Join(records[0], ",") != strings.Join(header, ",") {
		t.Fatalf("stream:\n%s\nwant the header and %d lines", out.String(), len(obs))
	}
	for i, o := range obs {
		rec := records[i+1]
		want := []string{strconv.FormatInt(o.Start.UnixNano(), 10), string(r.PhaseOf(o.Start)), string(o.Function),
			strconv.FormatInt(o.Duration.Microseconds(), 10), string(o.Class)}
		if strings.Join(rec, "|") != strings.Join(want, "|") {
			t.Errorf("line %d = %q, want %q", i+2, rec, want)
		}
	}
}

func TestCloseErrors(t *testing.T) {
	t.Run("no stream", func(t *testing.T) {
		if err := NewRecorder(defaultLimits(), window(measureStart, measureEnd), nil).Close(); err != nil {
			t.Errorf("Close without a stream: %v", err)
		}
	})
	t.Run("close fails", func(t *testing.T) {
		out := &closeBuffer{closeErr: errors.New("close failed")}
		r := NewRecorder(defaultLimits(), window(measureStart, measureEnd), out)
		if err := r.Close(); err == nil || !out.closed {
			t.Errorf("Close = %v (stream closed %v), want the close error", err, out.closed)
		}
	})
	t.Run("write fails", func(t *testing.T) {
		r := NewRecorder(defaultLimits(), window(measureStart, measureEnd), failWriter{})
		// Enough lines to overflow the buffer, so a write reaches failWriter.
		for i := 0; i < 5000; i++ {
			r.Observe(measure.Observation{Function: measure.IMAPUIDFetch, Start: measureStart, Duration: time.Millisecond})
		}
		if err := r.Close(); err == nil {
			t.Error("Close = nil after failed writes")
		}
		if n := ops(r.Stats(workload.Measurement), measure.IMAPUIDFetch); n != 5000 {
			t.Errorf("%d operations counted after write errors, want 5000", n)
		}
	})
}

// TestConcurrent observes from many goroutines (run with -race) and checks
// that nothing is lost: counts per phase and lines in the stream.
func TestConcurrent(t *testing.T) {
	const workers, each = 8, 250
	var out closeBuffer
	r := NewRecorder(defaultLimits(), window(measureStart, measureEnd), &out)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				start := measureStart.Add(time.Duration(i%3-1) * 10 * time.Minute) // warm-up, measurement, ramp-down
				o := measure.Observation{Function: measure.AllFunctions[(w+i)%len(measure.AllFunctions)], Start: start, Duration: time.Millisecond}
				if i%5 == 0 {
					o.Class, o.Err = measure.Connection, errors.New("reset")
				}
				r.Observe(o)
				if i%50 == 0 {
					r.ErrorSamples()
				}
			}
		}(w)
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range []workload.Phase{workload.Warmup, workload.Measurement, workload.Rampdown} {
		var n int64
		for _, fs := range r.Stats(p).Snapshot() {
			n += fs.Operations
		}
		if n == 0 {
			t.Errorf("phase %s got no operations", p)
		}
		total += n
	}
	if total != workers*each {
		t.Errorf("%d operations counted, want %d", total, workers*each)
	}
	if lines := strings.Count(out.String(), "\n"); lines != workers*each+1 {
		t.Errorf("%d lines streamed, want %d", lines, workers*each+1)
	}
	if n := len(r.ErrorSamples()); n > maxSamples*len(measure.AllFunctions) {
		t.Errorf("%d error samples, more than the bound", n)
	}
}
