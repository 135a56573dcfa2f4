package compliance

import (
	"math"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int64
		lo, hi float64
	}{
		{0, 10, 0, 0.27753},
		{10, 10, 0.72247, 1},
		{5, 10, 0.23659, 0.76341},
		{73, 73, 0.95002, 1},
		{72, 73, 0.92638, 0.99758},
		{0, 0, 0, 1},
	} {
		lo, hi := Wilson(c.k, c.n, DefaultZ)
		if math.Abs(lo-c.lo) > 5e-5 || math.Abs(hi-c.hi) > 5e-5 {
			t.Errorf("Wilson(%d, %d) = [%.5f, %.5f], want [%.5f, %.5f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestDecide(t *testing.T) {
	row := func(within, ops int64) Row {
		r := Row{Function: measure.IMAPList, Limit: 5 * time.Second, RequiredPercent: 95, Operations: ops, WithinLimit: within}
		if ops > 0 {
			r.PercentCompliant = 100 * float64(within) / float64(ops)
			r.Pass = r.PercentCompliant > 95
		}
		return r
	}
	errs := func(errors, ops int64) ErrorRow { return ErrorRow{Operations: ops, Errors: errors, MaxPercent: 1} }
	for _, c := range []struct {
		name string
		row  Row
		e    ErrorRow
		want Decision
		rowD Decision
	}{
		{"all compliant, enough operations", row(200, 200), errs(0, 2000), Passed, Passed},
		{"all compliant, too few operations", row(4, 4), errs(0, 2000), Undecided, Undecided},
		{"one slow of four: not decided by it", row(3, 4), errs(0, 2000), Undecided, Undecided},
		{"clearly failing", row(50, 100), errs(0, 2000), Failed, Failed},
		{"no operations", row(0, 0), errs(0, 2000), Undecided, Undecided},
		{"errors clearly above", row(200, 200), errs(100, 2000), Failed, Passed},
		{"errors too few operations", row(200, 200), errs(0, 100), Undecided, Passed},
		{"a failing row outweighs an undecided one", row(10, 100), errs(0, 100), Failed, Failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := Table{Rows: []Row{c.row}, Errors: c.e}.Decide(DefaultZ)
			if ev.Decision != c.want || ev.Rows[0].Decision != c.rowD {
				t.Errorf("decision %s (row %s), want %s (row %s): %v", ev.Decision, ev.Rows[0].Decision, c.want, c.rowD, ev.Rows)
			}
		})
	}
}
