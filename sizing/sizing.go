// Package sizing finds the highest compliant load of a workload on its
// server automatically: `mailbench size`. It runs the workload at one rate
// after another (each a whole run carried out by a sweep.RunFunc), growing
// the rate exponentially until a run fails, then bisecting between the
// highest passing and the lowest failing rate until they are within the
// precision, and confirms the result with extra runs at the found rate. The
// capacity is reported with its bracket (the uncertainty), the failing run
// that bounded it and the curve of p95 per function against load.
//
// Nothing in this package performs I/O except through the RunFunc and on the
// io.Writer given to the renderers and to Options.Log.
package sizing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/sweep"
	"github.com/mailbench/mailbench/workload"
)

// Defaults of Options.
const (
	DefaultPrecision = 5.0 // percent of the found rate
	DefaultConfirm   = 2   // confirmation runs at the found rate
	DefaultMaxRuns   = 40
	DefaultMinRate   = 1.0 // sessions/hour: below it the search gives up
	Growth           = 2.0 // the factor of the exponential phase
)

// Options configure Search.
type Options struct {
	// Run carries out each run; required.
	Run sweep.RunFunc
	// Budget bounds the search's wall time; 0: none. A run is started only
	// when its planned length (warm-up + measurement + ramp-down + settle)
	// fits in what is left.
	Budget time.Duration
	// Precision is the width of the final bracket in percent of its lower
	// end; 0: DefaultPrecision.
	Precision float64
	// Start is the first rate tried (sessions/hour); 0: the config's
	// target rate.
	Start float64
	// Confirm is the number of confirmation runs at the found rate; 0:
	// DefaultConfirm, negative: none.
	Confirm int
	// MaxRuns bounds the number of runs; 0: DefaultMaxRuns.
	MaxRuns int
	// MinRate: when a run at a rate below it fails, the search gives up
	// (nothing compliant); 0: DefaultMinRate.
	MinRate float64
	// GeneratorBound decides whether a run was limited by the generator;
	// nil: sweep.DefaultGeneratorBound(). Such a run
	// counts as failing (it is no evidence that the server can carry the
	// rate) and is marked.
	GeneratorBound sweep.GeneratorBound
	// Now is the clock of the budget; nil: time.Now.
	Now func() time.Time
	// Log receives one line per run started and finished; nil: none.
	Log io.Writer
}

// Purpose says why a probe was run.
type Purpose string

// The purposes of a probe.
const (
	First   Purpose = "start"   // the first rate
	Grow    Purpose = "grow"    // exponential phase, upwards
	Shrink  Purpose = "shrink"  // exponential phase, downwards (the first rate failed)
	Bisect  Purpose = "bisect"  // between the bracket's ends
	Confirm Purpose = "confirm" // again at the found rate, another seed
)

// Probe is one run of the search.
type Probe struct {
	Rate    float64 // target sessions/hour
	Seed    int64   // its schedule seed (sweep.DeriveSeed(cfg.Seed, its 1-based number))
	Purpose Purpose
	Run     *report.Run // nil when the run could not be carried out
	Err     string
	// Pass: the run is complete, compliant and not generator-bound.
	Pass bool
	// Reason says why it did not pass ("" when it did).
	Reason         string
	GeneratorBound bool
}

// Result is a whole search.
type Result struct {
	Name, Config string
	Embedded     bool
	PerUserHour  float64 // load.sessions_per_user_hour: users = rate / it
	Precision    float64 // percent, as used
	Budget       time.Duration
	Start        float64
	// Low is the highest rate that passed (0: none); High the lowest that
	// failed above it (+Inf: none failed). The capacity is Low; the true
	// limit lies in [Low, High).
	Low, High float64
	// Converged: High is finite, Low > 0 and (High-Low)/Low ≤ Precision%.
	Converged bool
	// Confirmed: Converged and every confirmation run at Low passed.
	Confirmed bool
	// Stopped says why the search ended before it converged and was
	// confirmed ("" when it did): the budget, the run limit, the user, a run
	// that could not be carried out, or no compliant rate.
	Stopped string
	Probes  []Probe
	// Bounding is the index in Probes of the failing run at High (-1: none).
	Bounding int
	// Elapsed is the search's wall time (by Options.Now).
	Elapsed time.Duration
}

// Users converts a rate to equivalent users.
func (r *Result) Users(rate float64) float64 {
	if r.PerUserHour <= 0 {
		return 0
	}
	return rate / r.PerUserHour
}

// BracketPercent is (High-Low)/Low in percent; +Inf when either end is
// missing.
func (r *Result) BracketPercent() float64 {
	if r.Low <= 0 || math.IsInf(r.High, 1) {
		return math.Inf(1)
	}
	return 100 * (r.High - r.Low) / r.Low
}

// Found reports whether a capacity was found: a passing rate with a failing
// one above it within the precision, confirmed.
func (r *Result) Found() bool { return r.Converged && r.Confirmed }

// plannedRun is the wall time a run of cfg is planned to take.
func plannedRun(cfg *workload.Config) time.Duration {
	p := cfg.Phases
	return p.Warmup.Duration + p.Measurement.Duration + p.Rampdown.Duration + p.Settle.Duration
}

// CheckOptions validates o and returns it with its defaults filled in. It
// doesn't perform I/O.
func CheckOptions(o Options) (Options, error) {
	if o.Precision == 0 {
		o.Precision = DefaultPrecision
	}
	if !(o.Precision > 0 && o.Precision <= 100) {
		return o, fmt.Errorf("size: precision %g%%: want 0 < precision ≤ 100", o.Precision)
	}
	if o.Budget < 0 {
		return o, fmt.Errorf("size: budget %v: want ≥ 0", o.Budget)
	}
	if o.Start < 0 || math.IsNaN(o.Start) || math.IsInf(o.Start, 0) {
		return o, fmt.Errorf("size: start rate %g: want > 0", o.Start)
	}
	switch {
	case o.Confirm == 0:
		o.Confirm = DefaultConfirm
	case o.Confirm < 0:
		o.Confirm = 0
	}
	if o.MaxRuns == 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	if o.MaxRuns < 0 {
		return o, fmt.Errorf("size: max runs %d: want > 0", o.MaxRuns)
	}
	if o.MinRate == 0 {
		o.MinRate = DefaultMinRate
	}
	if o.GeneratorBound == nil {
		o.GeneratorBound = sweep.DefaultGeneratorBound()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// Search finds the highest compliant rate of cfg; see the package
// documentation and docs/size.md. Cancelling stop ends the current run
// (drained into a partial report, which counts as not passing) and the
// search; cancelling kill cuts the current run. The error is non-nil only
// for bad options or a config without a target rate; a run that could not
// be carried out ends the search with Stopped set.
func Search(stop, kill context.Context, cfg *workload.Config, opts Options) (*Result, error) {
	if opts.Run == nil {
		return nil, errors.New("size: no RunFunc")
	}
	if cfg == nil {
		return nil, errors.New("size: no config")
	}
	opts, err := CheckOptions(opts)
	if err != nil {
		return nil, err
	}
	start := opts.Start
	if start == 0 {
		start = cfg.TargetRate()
	}
	if !(start > 0) {
		return nil, errors.New("size: the config has no target rate (load.sessions_per_hour or users × sessions_per_user_hour) and --start is not set")
	}
	s := &searcher{cfg: cfg, opts: opts, t0: opts.Now(), res: &Result{
		Name: cfg.Name, Config: cfg.File, Embedded: cfg.Target.Embedded, PerUserHour: cfg.Load.SessionsPerUserHour,
		Precision: opts.Precision, Budget: opts.Budget, Start: start, High: math.Inf(1), Bounding: -1,
	}}
	s.search(stop, kill, start)
	s.res.Elapsed = opts.Now().Sub(s.t0)
	return s.res, nil
}

type searcher struct {
	cfg  *workload.Config
	opts Options
	t0   time.Time
	res  *Result
}

func (s *searcher) logf(format string, a ...any) {
	if s.opts.Log != nil {
		fmt.Fprintf(s.opts.Log, format+"\n", a...)
	}
}

// converged reports whether the bracket is within the precision.
func (s *searcher) converged() bool {
	r := s.res
	if r.Low <= 0 || math.IsInf(r.High, 1) {
		return false
	}
	// Within the precision, or at the resolution of the rates: the middle
	// rounds to an end.
	mid := roundRate((r.Low + r.High) / 2)
	return r.High-r.Low <= r.Low*s.opts.Precision/100 || mid <= r.Low || mid >= r.High
}

// next is the rate to try after the bracket changed.
func (s *searcher) next() (float64, Purpose) {
	r := s.res
	switch {
	case math.IsInf(r.High, 1):
		return r.Low * Growth, Grow
	case r.Low == 0:
		return r.High / Growth, Shrink
	}
	return (r.Low + r.High) / 2, Bisect
}

// search runs the bracketing search from rate, then the confirmations.
func (s *searcher) search(stop, kill context.Context, rate float64) {
	r := s.res
	purpose := First
	for {
		for !s.converged() {
			if rate < s.opts.MinRate {
				r.Stopped = fmt.Sprintf("no compliant rate: a run at %s sessions/hour failed and the next would be below the minimum of %s",
					report.FormatFloat(r.High, 0), report.FormatFloat(s.opts.MinRate, 0))
				return
			}
			p, ok := s.probe(stop, kill, rate, purpose)
			if !ok {
				return
			}
			if p.Pass {
				r.Low = max(r.Low, p.Rate)
			} else if p.Rate < r.High {
				r.High, r.Bounding = p.Rate, len(r.Probes)-1
				if p.Rate <= r.Low { // a failure at or below an earlier pass: that pass was luck
					r.Low = s.highestPassBelow(p.Rate)
				}
			}
			rate, purpose = s.next()
		}
		r.Converged = true
		confirmed := true
		for range s.opts.Confirm {
			p, ok := s.probe(stop, kill, r.Low, Confirm)
			if !ok {
				return
			}
			if !p.Pass {
				// The found rate does not hold: it bounds the search now.
				confirmed, r.Converged = false, false
				r.High, r.Bounding = r.Low, len(r.Probes)-1
				r.Low = s.highestPassBelow(r.High)
				break
			}
		}
		if confirmed {
			r.Confirmed = true
			return
		}
		rate, purpose = s.next()
	}
}

// highestPassBelow is the highest rate below limit whose every probe
// passed, or 0.
func (s *searcher) highestPassBelow(limit float64) float64 {
	best := 0.0
	for _, p := range s.res.Probes {
		if p.Rate < limit && p.Rate > best && s.allPassed(p.Rate) {
			best = p.Rate
		}
	}
	return best
}

func (s *searcher) allPassed(rate float64) bool {
	for _, p := range s.res.Probes {
		if p.Rate == rate && !p.Pass {
			return false
		}
	}
	return true
}

// probe carries out one run at rate; ok is false when the search must end
// (budget, run limit, stopped, or a run that could not be carried out).
func (s *searcher) probe(stop, kill context.Context, rate float64, purpose Purpose) (Probe, bool) {
	r := s.res
	rate = roundRate(rate)
	switch {
	case stop.Err() != nil || kill.Err() != nil:
		r.Stopped = "stopped by the user"
		return Probe{}, false
	case len(r.Probes) >= s.opts.MaxRuns:
		r.Stopped = fmt.Sprintf("the limit of %d runs was reached", s.opts.MaxRuns)
		return Probe{}, false
	case s.opts.Budget > 0 && s.opts.Now().Sub(s.t0)+plannedRun(s.cfg) > s.opts.Budget:
		r.Stopped = fmt.Sprintf("the budget of %v was used up (a run takes %v, %v had passed)",
			s.opts.Budget, plannedRun(s.cfg), s.opts.Now().Sub(s.t0).Round(time.Second))
		return Probe{}, false
	}
	n := len(r.Probes) + 1
	c := *s.cfg
	c.Load.SessionsPerHour = rate
	c.ScheduleSeed = sweep.DeriveSeed(s.cfg.Seed, n)
	p := Probe{Rate: rate, Seed: c.ScheduleSeed, Purpose: purpose}
	s.logf("size: run %d: %s sessions/hour (%s), bracket %s", n, report.FormatFloat(rate, 0), purpose, s.bracketText())
	run, err := s.opts.Run(stop, kill, &c)
	switch {
	case err != nil:
		p.Err = err.Error()
	case run == nil:
		p.Err = "the runner returned no report"
	default:
		p.Run = run
		switch bound, why := s.opts.GeneratorBound(run); {
		case run.Partial:
			p.Reason = "stopped early: " + run.PartialReason
		case bound:
			p.GeneratorBound, p.Reason = true, "GENERATOR-BOUND: "+why
		case !run.Table.Compliant:
			p.Reason = run.FailureReasons("")
		default:
			p.Pass = true
		}
	}
	r.Probes = append(r.Probes, p)
	if p.Err != "" {
		s.logf("size: run %d could not be carried out: %s", n, p.Err)
		r.Stopped = fmt.Sprintf("run %d (%s sessions/hour) could not be carried out: %s", n, report.FormatFloat(rate, 0), p.Err)
		return p, false
	}
	verdict := "PASS"
	if !p.Pass {
		verdict = "FAIL: " + p.Reason
	}
	s.logf("size: run %d: %s sessions/hour achieved, %s", n, report.FormatFloat(p.Run.AchievedSessionsPerHour, 0), verdict)
	if stop.Err() != nil || kill.Err() != nil {
		r.Stopped = "stopped by the user"
		return p, false
	}
	return p, true
}

// roundRate rounds a rate to 4 significant digits above 10,000
// sessions/hour (whole sessions/hour below), so that rates read well; the
// rounding (≤ 0.05%) is below any useful precision.
func roundRate(rate float64) float64 {
	if rate < 10000 {
		return math.Round(rate)
	}
	unit := math.Pow(10, math.Floor(math.Log10(rate))-3)
	return math.Round(rate/unit) * unit
}

func (s *searcher) bracketText() string {
	r := s.res
	hi := "∞"
	if !math.IsInf(r.High, 1) {
		hi = report.FormatFloat(r.High, 0)
	}
	return "[" + report.FormatFloat(r.Low, 0) + ", " + hi + ")"
}

// CurvePoint is one run on the load curve.
type CurvePoint struct {
	Rate, Achieved float64
	Pass           bool
	Purpose        Purpose
	P95            map[string]time.Duration // per function row that ran
}

// Curve is every run that produced a report, by rate (then by order run):
// the p95 of each function against load.
func (r *Result) Curve() []CurvePoint {
	var out []CurvePoint
	for _, p := range r.Probes {
		if p.Run == nil {
			continue
		}
		cp := CurvePoint{Rate: p.Rate, Achieved: p.Run.AchievedSessionsPerHour, Pass: p.Pass, Purpose: p.Purpose, P95: map[string]time.Duration{}}
		for _, row := range p.Run.Table.Rows {
			if row.Operations > 0 {
				cp.P95[string(row.Function)] = row.P95
			}
		}
		out = append(out, cp)
	}
	slices.SortStableFunc(out, func(a, b CurvePoint) int {
		switch {
		case a.Rate < b.Rate:
			return -1
		case a.Rate > b.Rate:
			return 1
		}
		return 0
	})
	return out
}
