package compliance

import (
	"fmt"
	"math"
)

// DefaultZ is the normal quantile of the two-sided 95% confidence interval
// that Decide uses.
const DefaultZ = 1.959964

// Wilson returns the Wilson score interval of a binomial share: k successes
// in n trials, at the normal quantile z (DefaultZ for 95%). Both ends are
// in [0, 1]; n ≤ 0 gives [0, 1] (nothing is known). Unlike the normal
// approximation it stays inside [0, 1] and is honest at k = 0 and k = n,
// which is where compliance rows live. It doesn't perform I/O.
func Wilson(k, n int64, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	k = min(max(k, 0), n)
	nf, p := float64(n), float64(k)/float64(n)
	z2 := z * z
	centre := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(centre-half, 0), min(centre+half, 1)
}

// Decision is the outcome of a row when the evidence is weighed.
type Decision string

// The decisions. A row is Passed when the whole confidence interval of its
// share lies on the passing side of the requirement, Failed when the whole
// interval lies on the failing side, and Undecided when the interval
// straddles it: its operations are too few to tell the server's behaviour
// from the noise of a finite sample.
const (
	Passed    Decision = "pass"
	Failed    Decision = "fail"
	Undecided Decision = "undecided"
)

// RowEvidence is one row's decision with the interval behind it.
type RowEvidence struct {
	Name       string // the function, or ErrorRateName
	Decision   Decision
	Operations int64
	// Low and High bound the share in percent: the compliant share of a
	// function row, the error share of the error row.
	Low, High float64
	Required  float64 // the requirement in percent (>Required for a row, <Required for errors)
}

// String renders e, e.g. "IMAP LIST: undecided (4 operations, 95% interval
// 51.0–100.0% against >95%)".
func (e RowEvidence) String() string {
	op := ">"
	if e.Name == ErrorRateName {
		op = "<"
	}
	return fmt.Sprintf("%s: %s (%d operations, 95%% interval %.1f–%.1f%% against %s%s%%)",
		e.Name, e.Decision, e.Operations, e.Low, e.High, op, FormatPercentLimit(e.Required))
}

// Evidence is a table weighed row by row; see Decide.
type Evidence struct {
	Rows []RowEvidence // every measured row, then the error row
	// Decision is Failed when a row failed, else Undecided when a row is
	// undecided, else Passed.
	Decision Decision
}

// Rows of a decision, by name.
func (e Evidence) Named(d Decision) []RowEvidence {
	var out []RowEvidence
	for _, r := range e.Rows {
		if r.Decision == d {
			out = append(out, r)
		}
	}
	return out
}

// Decide weighs every row of t by the Wilson interval of its share at z:
// a function row passes when the lower end of its compliant share is above
// the required percent, fails when the upper end is at or below it; the
// error row passes when the upper end of its error share is below the
// maximum, fails when the lower end is at or above it. Anything else, and a
// row with no operations, is undecided: with few operations one slow
// operation would otherwise decide. A row counted against a limit other
// than its rule's fails (its exact counts cannot be re-derived). Rows that
// are not measured (Rule.NotMeasured) and without operations are left out.
// Decide doesn't perform I/O.
func (t Table) Decide(z float64) Evidence {
	ev := Evidence{Decision: Passed}
	add := func(r RowEvidence) {
		ev.Rows = append(ev.Rows, r)
		switch {
		case r.Decision == Failed:
			ev.Decision = Failed
		case r.Decision == Undecided && ev.Decision == Passed:
			ev.Decision = Undecided
		}
	}
	for _, row := range t.Rows {
		if row.Operations <= 0 && row.NotMeasured {
			continue
		}
		lo, hi := Wilson(row.WithinLimit, row.Operations, z)
		r := RowEvidence{Name: string(row.Function), Operations: row.Operations, Low: 100 * lo, High: 100 * hi, Required: row.RequiredPercent}
		switch {
		case row.Operations <= 0:
			r.Decision = Undecided
		case row.Reason != "" && row.PercentCompliant == 0 && row.WithinLimit > 0:
			// counted against another limit: no share to weigh
			r.Decision = Failed
		case r.Low > row.RequiredPercent:
			r.Decision = Passed
		case r.High <= row.RequiredPercent:
			r.Decision = Failed
		default:
			r.Decision = Undecided
		}
		add(r)
	}
	e := t.Errors
	lo, hi := Wilson(e.Errors, e.Operations, z)
	r := RowEvidence{Name: ErrorRateName, Operations: e.Operations, Low: 100 * lo, High: 100 * hi, Required: e.MaxPercent}
	switch {
	case e.Operations <= 0:
		r.Decision = Undecided
	case r.High < e.MaxPercent:
		r.Decision = Passed
	case r.Low >= e.MaxPercent:
		r.Decision = Failed
	default:
		r.Decision = Undecided
	}
	add(r)
	return ev
}
