package report_test

import (
	"fmt"
	"os"

	"github.com/mailbench/mailbench/report"
)

// A saved JSON report reads back into the Run it was written from: its
// figures, its compliance table re-evaluated from the exact counts, and
// every renderer (WriteText, WriteHTML, WriteSideBySide) works from it.
func ExampleReadJSON() {
	f, err := os.Open("testdata/compliant.json.golden")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	run, err := report.ReadJSON(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q: %s\n", run.Name, report.Verdict(run.Table)) // Verdict says "Verdict: ..."
	for _, row := range run.Table.Rows[:2] {
		fmt.Printf("%s: %d of %d within %v\n", row.Function, row.WithinLimit, row.Operations, row.Limit)
	}
	// Output:
	// "enterprise-2500": Verdict: COMPLIANT
	// SMTP Connect: 500 of 500 within 5s
	// SMTP Data: 535 of 537 within 5s
}
