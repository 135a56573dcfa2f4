package metrics_test

import (
	"fmt"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// FunctionStats keeps exact counts against the limit and an HDR histogram
// for the percentiles; two of them (two shards) merge exactly.
func ExampleFunctionStats() {
	a := metrics.NewFunctionStats(measure.SMTPData, 5*time.Second)
	b := metrics.NewFunctionStats(measure.SMTPData, 5*time.Second)
	for i := range 100 {
		a.Record(time.Duration(i+1)*time.Millisecond, measure.OK)
	}
	b.Record(8*time.Second, measure.OK)
	b.Record(time.Second, measure.Timeout)
	if err := a.Merge(b); err != nil {
		fmt.Println(err)
		return
	}
	p95 := time.Duration(a.Histogram.ValueAtQuantile(95)) * time.Microsecond
	fmt.Printf("%s: %d operations, %d within %v, %d failed, p95 %v\n", a.Function, a.Operations, a.WithinLimit, a.Limit, a.ErrorCount(), p95)
	// Output: SMTP Data: 102 operations, 100 within 5s, 1 failed, p95 97.023ms
}
