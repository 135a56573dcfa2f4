package compliance_test

import (
	"fmt"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// A function passes when strictly more than its required percentage of
// operations succeeded within its limit; the run passes when every row
// does and the error rate is below its maximum.
func ExampleEvaluate() {
	rules := compliance.Rules{
		Functions:       []compliance.Rule{{Function: measure.IMAPSelectInbox, Limit: 5 * time.Second, RequiredPercent: 95}},
		MaxErrorPercent: 1,
	}
	stats := metrics.NewFunctionStats(measure.IMAPSelectInbox, 5*time.Second)
	for i := range 1000 {
		d := 20 * time.Millisecond
		if i%25 == 0 {
			d = 6 * time.Second // 40 of 1,000 over the limit: 96% within
		}
		stats.Record(d, measure.OK)
	}
	table := compliance.Evaluate(map[measure.Function]*metrics.FunctionStats{measure.IMAPSelectInbox: stats}, rules)
	row, _ := table.Row(measure.IMAPSelectInbox)
	fmt.Printf("%s: %d of %d within %v (%.2f%%), pass %v\n", row.Function, row.WithinLimit, row.Operations, row.Limit, row.PercentCompliant, row.Pass)
	fmt.Println("compliant:", table.Compliant)
	// Output:
	// IMAP SELECT_INBOX: 960 of 1000 within 5s (96.00%), pass true
	// compliant: true
}
