// Package timelinetest builds timelines (metrics.Point) for the tests of
// the report model and of its renderers: points whose figures are taken
// from their histograms as the recorder takes them.
package timelinetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// Start is when the timelines built here begin.
var Start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// FunctionPoint is a function's operations in a point: ops durations
// spread evenly over (0, top], the first errs of them failed.
func FunctionPoint(f measure.Function, ops, errs int64, top time.Duration) metrics.FunctionPoint {
	h := metrics.NewHistogram()
	for k := int64(1); k <= ops; k++ {
		metrics.RecordDuration(h, top*time.Duration(k)/time.Duration(ops))
	}
	enc, err := metrics.EncodeHistogram(h)
	if err != nil {
		panic(err)
	}
	return metrics.FunctionPoint{Function: f, Totals: metrics.Totals{Operations: ops, Errors: errs}, Histogram: enc}
}

// Point is a point of the given functions, its figures taken from their
// histograms as the recorder takes them.
func Point(start time.Time, length time.Duration, sessions int64, fps ...metrics.FunctionPoint) metrics.Point {
	p, exact, err := metrics.MergePoints(metrics.Point{Start: start, Length: length, Sessions: sessions, Functions: fps})
	if err != nil || !exact {
		panic(fmt.Sprintf("timelinetest.Point: exact %v, %v", exact, err))
	}
	return p
}

// Sample is n 10 s intervals from Start whose load and p95 grow with i:
// IMAP Connect and SMTP Data, and local delivery times in every other
// interval.
func Sample(_ testing.TB, n int) []metrics.Point {
	tl := make([]metrics.Point, n)
	for i := range tl {
		k := int64(i + 1)
		fps := []metrics.FunctionPoint{
			FunctionPoint(measure.SMTPData, 40*k, int64(i%3), 3*time.Millisecond),
			FunctionPoint(measure.IMAPConnect, 60*k, 0, time.Duration(k)*12*time.Millisecond),
		}
		if i%2 == 0 {
			fps = append(fps, FunctionPoint(measure.DeliveryLocal, 5, 0, time.Duration(k)*time.Second))
		}
		tl[i] = Point(Start.Add(time.Duration(i)*10*time.Second), 10*time.Second, k, fps...)
	}
	return tl
}
