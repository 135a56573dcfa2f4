// Package compliance counts timed operations exactly, per function and
// response-time limit, and evaluates them against the SPECmail2008-style
// compliance rules: each function must finish within its limit for strictly
// more than RequiredPercent of its operations, and the error rate over all
// operations must be strictly below MaxErrorPercent.
//
// Percentages are computed from exact counters, never from histogram
// estimates; the HDR histograms only supply the reported percentiles.
package compliance

import (
	"errors"
	"fmt"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// Default limits, as in SPECmail2008 (functions) and SPECmail2001 (delivery).
const (
	DefaultLimit            = 5 * time.Second
	DefaultRequiredPercent  = 95.0
	DefaultDeliveryLimit    = 60 * time.Second
	DefaultMaxErrorPercent  = 1.0
	ErrorRateName           = "Error Rate" // the name of the error row in Table.Failing
	noOperationsReason      = "no operations"
	maxSupportedLimit       = time.Hour
	maxRequiredPercentValue = 100.0
)

// Rule is the response-time requirement of one function: the function passes
// iff strictly more than RequiredPercent of its operations succeeded within
// Limit (SPEC's ">95%"; exactly 95.00% fails).
type Rule struct {
	Function        measure.Function
	Limit           time.Duration
	RequiredPercent float64
	// NotMeasured: the run's config cannot run this function (its
	// session type has weight 0, say). Its row, without operations, is
	// "not measured" rather than failing; the run is then not a full
	// SPEC-style run (Table.NotMeasured).
	NotMeasured bool
}

// Rules is the whole compliance definition of a run. The error rate (all
// failed operations of every function divided by all operations) passes iff
// it is strictly below MaxErrorPercent (exactly 1% fails "<1%").
type Rules struct {
	Functions       []Rule
	MaxErrorPercent float64
}

// DefaultRules returns the fourteen SPECmail2008 functions at 5 s / >95%, the
// two delivery-time rows at 60 s / >95%, and an error rate below 1%.
// The result is a fresh value the caller may modify.
func DefaultRules() Rules {
	r := Rules{MaxErrorPercent: DefaultMaxErrorPercent}
	for _, f := range measure.SPECFunctions {
		r.Functions = append(r.Functions, Rule{Function: f, Limit: DefaultLimit, RequiredPercent: DefaultRequiredPercent})
	}
	for _, f := range []measure.Function{measure.DeliveryLocal, measure.DeliveryRemote} {
		r.Functions = append(r.Functions, Rule{Function: f, Limit: DefaultDeliveryLimit, RequiredPercent: DefaultRequiredPercent})
	}
	return r
}

// Rule returns the rule for f and whether there is one.
func (r Rules) Rule(f measure.Function) (Rule, bool) {
	for _, x := range r.Functions {
		if x.Function == f {
			return x, true
		}
	}
	return Rule{}, false
}

// Validate reports every problem with r: an empty or duplicated function
// name, a limit outside (0, 1h] (the histogram's range), a required percent
// outside [0, 100), or a maximum error percent outside (0, 100].
// Unknown function names are allowed (they are not SPEC rows but still work).
func (r Rules) Validate() error {
	var errs []error
	seen := make(map[measure.Function]bool)
	for i, x := range r.Functions {
		switch {
		case x.Function == "":
			errs = append(errs, fmt.Errorf("rule %d: empty function name", i))
		case seen[x.Function]:
			errs = append(errs, fmt.Errorf("rule %q: duplicated", x.Function))
		}
		seen[x.Function] = true
		if x.Limit <= 0 || x.Limit > maxSupportedLimit {
			errs = append(errs, fmt.Errorf("rule %q: limit %v outside (0, %v]", x.Function, x.Limit, maxSupportedLimit))
		}
		if !(x.RequiredPercent >= 0 && x.RequiredPercent < maxRequiredPercentValue) {
			errs = append(errs, fmt.Errorf("rule %q: required percent %v outside [0, 100)", x.Function, x.RequiredPercent))
		}
	}
	if !(r.MaxErrorPercent > 0 && r.MaxErrorPercent <= 100) {
		errs = append(errs, fmt.Errorf("max error percent %v outside (0, 100]", r.MaxErrorPercent))
	}
	return errors.Join(errs...)
}

// ordered returns r's rules in report order: measure.SPECFunctions order,
// then the delivery rows, then any other functions in the order given.
func (r Rules) ordered() []Rule {
	var out []Rule
	placed := make(map[measure.Function]bool)
	for _, f := range measure.AllFunctions {
		if x, ok := r.Rule(f); ok && !placed[f] {
			out = append(out, x)
			placed[f] = true
		}
	}
	for _, x := range r.Functions {
		if !placed[x.Function] {
			out = append(out, x)
			placed[x.Function] = true
		}
	}
	return out
}

// Limits returns each ruled function's response-time limit, the form in
// which metrics counts operations within their limit.
func (r Rules) Limits() map[measure.Function]time.Duration {
	m := make(map[measure.Function]time.Duration, len(r.Functions))
	for _, x := range r.Functions {
		m[x.Function] = x.Limit
	}
	return m
}

// RulesFor returns the compliance rules of plan: its rows and its maximum
// error rate. It doesn't perform I/O.
func RulesFor(plan *workload.Plan) Rules {
	r := Rules{MaxErrorPercent: plan.MaxErrorPercent}
	for _, fp := range plan.Rules {
		r.Functions = append(r.Functions, Rule{Function: fp.Function, Limit: fp.Limit, RequiredPercent: fp.RequiredPercent,
			NotMeasured: fp.PerHour <= 0})
	}
	return r
}
