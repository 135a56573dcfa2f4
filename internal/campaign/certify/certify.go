// Package certify carries out a certification-style run of a workload —
// `mailbench certify` — under the run rules of docs/run-rules.md, modelled
// on SPECmail2008 and SPECmail2001: warm-up and measurement of at least the
// minimum lengths, users = sessions/hour ÷ 4.8, one run at 80%, three
// iterations at 100% with distinct derived seeds, one at 120%, mailboxes
// initialised and verified before each run, a generator that is not the
// bottleneck. It checks every rule, names the broken ones (the result is
// then NOT CERTIFIABLE), reports the median iteration at 100% and a
// disclosure section.
//
// Nothing in this package performs I/O except through the functions in
// Options, ProbeBanners and ProbeMachine, and on the io.Writer given to the
// renderers.
package certify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/resume"
	"github.com/mailbench/mailbench/internal/campaign/sweep"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// Rules are the numbers of the run rules (docs/run-rules.md).
type Rules struct {
	MinWarmup      time.Duration
	MinMeasurement time.Duration
	PerUserHour    float64 // load.sessions_per_user_hour must be this
	Iterations     int     // at 100%
}

// DefaultRules are the rules of docs/run-rules.md. `mailbench certify`
// always uses them; other values are for tests, and a Result made with
// them says so (Result.RulesModified).
func DefaultRules() Rules {
	return Rules{MinWarmup: 5 * time.Minute, MinMeasurement: 30 * time.Minute, PerUserHour: 4.8, Iterations: 3}
}

// The load levels of a certification, in percent of the target rate, in the
// order run. Only RequiredLow and 100 must pass; 120 characterises.
const (
	RequiredLow     = 80.0
	Characterising  = 120.0
	IterationsLevel = 100.0
)

// The names of the rules, as reported.
const (
	RuleWarmup      = "warm-up length"
	RuleMeasurement = "measurement length"
	RuleUsers       = "users = sessions/hour ÷ 4.8"
	RuleIterations  = "three iterations at 100% with distinct seeds"
	RuleLevels      = "80% and 100% compliant"
	RuleComplete    = "every run complete"
	RuleMailboxes   = "mailboxes initialised and verified before each run"
	RuleGenerator   = "generator not the bottleneck"
	RuleDisclosure  = "system described (disclosure.system)"
	RuleVerified    = "every delivery verified"
)

// Options configure Run.
type Options struct {
	// Run carries out each run; required.
	Run campaign.RunFunc
	// Prepare initialises and verifies the mailboxes of a real server
	// before each run (the CLI: populate.Clean, Init, Verify). Not used for
	// the embedded target, which is fresh in every run. nil with a real
	// server: the runs go ahead but the mailbox rule fails.
	Prepare func(ctx context.Context, cfg *workload.Config) error
	// GeneratorBound decides whether the generator limited a run; nil:
	// sweep.DefaultGeneratorBound().
	GeneratorBound sweep.GeneratorBound
	// Rules: nil means DefaultRules().
	Rules *Rules
	// Disclosure is filled in by the caller (ProbeMachine, ProbeBanners,
	// the version); Run adds the config's hash and description.
	Disclosure Disclosure
	// Log receives one line per run started and finished; nil: none.
	Log io.Writer
}

// RunResult is one run of the certification.
type RunResult struct {
	Level     float64 // percent of the target rate
	Iteration int     // 1-based, within the level
	Rate      float64 // target sessions/hour
	Seed      int64   // the schedule seed: sweep.DeriveSeed(cfg.Seed, k), k its 1-based number
	Users     int     // users simulated: ⌈Rate ÷ sessions_per_user_hour⌉ (users.count of a users file's config otherwise)
	Prepared  string  // "fresh embedded target", "initialised and verified", or why not
	PrepareOK bool
	Run       *report.Run // nil when it could not be carried out
	Err       string
	// GeneratorBound and GeneratorWhy: the generator limited the run.
	GeneratorBound bool
	GeneratorWhy   string
}

// Verdict is PASS (complete, compliant), FAIL, PARTIAL, ERROR or "-" (not
// run), as sweep's.
func (r RunResult) Verdict() sweep.Verdict {
	return sweep.Iteration{Run: r.Run, Err: r.Err}.Verdict()
}

// Check is one rule and its outcome.
type Check struct {
	Rule   string
	Pass   bool
	Detail string // what was found; why it fails
}

// Result is a whole certification.
type Result struct {
	Name, Config  string
	Embedded      bool
	BaseRate      float64 // the config's target: 100%
	PerUserHour   float64
	Rules         Rules
	RulesModified bool // Rules are not DefaultRules(): never certifiable
	Runs          []RunResult
	Checks        []Check
	// Median is the index in Runs of the median iteration at 100% (by
	// achieved sessions/hour; -1 when none produced a report).
	Median     int
	Disclosure Disclosure
	// Partial: stopped before its last run.
	Partial       bool
	PartialReason string
}

// Certifiable reports whether every rule passed (and the rules are the
// documented ones).
func (r *Result) Certifiable() bool {
	if r.RulesModified || len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if !c.Pass {
			return false
		}
	}
	return true
}

// Broken lists the rules that failed, by name.
func (r *Result) Broken() []string {
	var out []string
	if r.RulesModified {
		out = append(out, "the documented rules (modified for this run)")
	}
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c.Rule)
		}
	}
	return out
}

// plan is the certification's runs in order: 80%, 100% × iterations, 120%.
func plan(iterations int) (levels []float64, iters []int) {
	levels = append(levels, RequiredLow)
	iters = append(iters, 1)
	for i := range iterations {
		levels = append(levels, IterationsLevel)
		iters = append(iters, i+1)
	}
	return append(levels, Characterising), append(iters, 1)
}

// Run carries out the certification of cfg. Cancelling stop ends the
// current run (partial) and the certification; kill cuts the current run.
// The error is non-nil only for bad options or a config without a target
// rate; broken rules are in the Result.
func Run(stop, kill context.Context, cfg *workload.Config, opts Options) (*Result, error) {
	if opts.Run == nil {
		return nil, errors.New("certify: no RunFunc")
	}
	if cfg == nil {
		return nil, errors.New("certify: no config")
	}
	rules := DefaultRules()
	if opts.Rules != nil {
		rules = *opts.Rules
	}
	if rules.Iterations < 1 {
		return nil, fmt.Errorf("certify: %d iterations", rules.Iterations)
	}
	base := cfg.TargetRate()
	if !(base > 0) {
		return nil, errors.New("certify: the config has no target rate (load.sessions_per_hour or users × sessions_per_user_hour)")
	}
	gb := opts.GeneratorBound
	if gb == nil {
		gb = sweep.DefaultGeneratorBound()
	}
	logf := func(format string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", a...)
		}
	}
	res := &Result{
		Name: cfg.Name, Config: cfg.File, Embedded: cfg.Target.Embedded, BaseRate: base,
		PerUserHour: cfg.Load.SessionsPerUserHour, Rules: rules, RulesModified: rules != DefaultRules(),
		Median: -1, Disclosure: opts.Disclosure,
	}
	res.Disclosure.ConfigHash = resume.ConfigHash(cfg)
	res.Disclosure.ConfigFile = cfg.File
	res.Disclosure.System = cfg.Disclosure.Fields()
	levels, iters := plan(rules.Iterations)
	for k, pct := range levels {
		rr := RunResult{Level: pct, Iteration: iters[k], Rate: base * pct / 100, Seed: sweep.DeriveSeed(cfg.Seed, k+1)}
		if res.Partial || stop.Err() != nil || kill.Err() != nil {
			if !res.Partial {
				res.Partial, res.PartialReason = true, fmt.Sprintf("stopped before run %d (%g%%)", k+1, pct)
			}
			res.Runs = append(res.Runs, rr)
			continue
		}
		c := sweep.LevelConfig(cfg, base, pct)
		c.ScheduleSeed = rr.Seed
		// users = sessions/hour ÷ sessions_per_user_hour, at every level
		// (the population of a users file stays as it is: the users rule
		// then fails).
		if cfg.Users.File == "" && c.Load.SessionsPerUserHour > 0 {
			c.Users.Count = max(int(math.Ceil(rr.Rate/c.Load.SessionsPerUserHour)), 1)
			c.Delivery.WatchUsers = min(c.Delivery.WatchUsers, c.Users.Count)
		}
		rr.Users = c.Users.Count
		switch {
		case cfg.Target.Embedded:
			rr.Prepared, rr.PrepareOK = "fresh embedded target", true
		case opts.Prepare == nil:
			rr.Prepared = "no way to initialise and verify the mailboxes of this server"
		default:
			logf("certify: run %d/%d: initialising and verifying the mailboxes", k+1, len(levels))
			if err := opts.Prepare(stop, c); err != nil {
				rr.Prepared = "initialise/verify failed: " + err.Error()
			} else {
				rr.Prepared, rr.PrepareOK = "initialised and verified", true
			}
		}
		logf("certify: run %d/%d: %g%% (%.0f sessions/hour), iteration %d, seed %d", k+1, len(levels), pct, rr.Rate, rr.Iteration, rr.Seed)
		run, err := opts.Run(stop, kill, c)
		switch {
		case err != nil:
			rr.Err = err.Error()
		case run == nil:
			rr.Err = "the runner returned no report"
		default:
			rr.Run = run
			rr.GeneratorBound, rr.GeneratorWhy = gb(run)
		}
		logf("certify: run %d/%d: %s", k+1, len(levels), rr.Verdict())
		if stop.Err() != nil || kill.Err() != nil {
			res.Partial, res.PartialReason = true, fmt.Sprintf("stopped during run %d (%g%%)", k+1, pct)
		}
		res.Runs = append(res.Runs, rr)
	}
	res.Median = median(res.Runs)
	res.Checks = check(cfg, rules, res)
	return res, nil
}

// median is the index of the median iteration at 100%: the iterations
// with a report sorted by achieved sessions/hour (stable, so ties keep run
// order), the middle one (the lower middle of an even count); -1: none.
func median(runs []RunResult) int {
	var idx []int
	for i, r := range runs {
		if r.Level == IterationsLevel && r.Run != nil {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return -1
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := runs[a].Run.AchievedSessionsPerHour, runs[b].Run.AchievedSessionsPerHour
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return idx[(len(idx)-1)/2]
}

// check evaluates every rule of docs/run-rules.md.
func check(cfg *workload.Config, rules Rules, res *Result) []Check {
	var out []Check
	add := func(rule string, pass bool, detail string) { out = append(out, Check{rule, pass, detail}) }

	w, m := cfg.Phases.Warmup.Duration, cfg.Phases.Measurement.Duration
	add(RuleWarmup, w >= rules.MinWarmup, fmt.Sprintf("%v (at least %v)", w, rules.MinWarmup))
	add(RuleMeasurement, m >= rules.MinMeasurement, fmt.Sprintf("%v (at least %v)", m, rules.MinMeasurement))
	usersOK, usersWhy := cfg.Load.SessionsPerUserHour == rules.PerUserHour, fmt.Sprintf("load.sessions_per_user_hour = %g (must be %g)", cfg.Load.SessionsPerUserHour, rules.PerUserHour)
	for i, r := range res.Runs {
		if r.Run == nil || r.Run.Users == 0 { // 0: a report that does not record its users
			continue
		}
		if u, ok := r.Run.UsersFigure(); !ok {
			usersOK = false
			usersWhy += fmt.Sprintf("; run %d ran %d users for %s sessions/hour (needs ⌈rate ÷ %g⌉)", i+1, r.Run.Users, report.FormatFloat(r.Rate, 0), cfg.Load.SessionsPerUserHour)
		} else if i == 0 {
			usersWhy += fmt.Sprintf("; every run simulates rate ÷ %g users (run 1: %d)", cfg.Load.SessionsPerUserHour, u)
		}
	}
	if cfg.Users.File != "" {
		usersOK = false
		usersWhy += "; the users come from users.file, a fixed population"
	}
	add(RuleUsers, usersOK, usersWhy)

	seeds := map[int64]bool{}
	n, distinct := 0, true
	for _, r := range res.Runs {
		if r.Level != IterationsLevel {
			continue
		}
		if r.Run != nil {
			n++
		}
		if seeds[r.Seed] {
			distinct = false
		}
		seeds[r.Seed] = true
	}
	add(RuleIterations, n == rules.Iterations && distinct,
		fmt.Sprintf("%d of %d iterations produced a report; seeds distinct: %v", n, rules.Iterations, distinct))

	var failing []string
	for i, r := range res.Runs {
		if r.Level != Characterising && r.Verdict() != sweep.Pass {
			failing = append(failing, fmt.Sprintf("run %d (%g%% #%d): %s", i+1, r.Level, r.Iteration, why(r)))
		}
	}
	add(RuleLevels, len(failing) == 0, joinOr(failing, "every run at 80% and 100% passed"))

	var incomplete []string
	for i, r := range res.Runs {
		if v := r.Verdict(); v != sweep.Pass && v != sweep.Fail {
			incomplete = append(incomplete, fmt.Sprintf("run %d (%g%%): %s", i+1, r.Level, v))
		}
	}
	add(RuleComplete, len(incomplete) == 0 && !res.Partial, joinOr(incomplete, "every run ran its whole window"))

	var unprepared []string
	for i, r := range res.Runs {
		if !r.PrepareOK {
			unprepared = append(unprepared, fmt.Sprintf("run %d: %s", i+1, orDash(r.Prepared)))
		}
	}
	prepared := "a fresh embedded target in every run"
	if !res.Embedded {
		prepared = "initialised and verified before every run"
	}
	add(RuleMailboxes, len(unprepared) == 0, joinOr(unprepared, prepared))

	var bound []string
	for i, r := range res.Runs {
		if r.GeneratorBound && r.Level != Characterising {
			bound = append(bound, fmt.Sprintf("run %d (%g%%): GENERATOR-BOUND: %s", i+1, r.Level, r.GeneratorWhy))
		}
	}
	add(RuleGenerator, len(bound) == 0, joinOr(bound, "no run at 80% or 100% was generator-bound"))

	var unverified []string
	for i, r := range res.Runs {
		if r.Run != nil && r.Run.Delivery != nil && r.Run.Delivery.Unverified > 0 {
			unverified = append(unverified, fmt.Sprintf("run %d (%g%%): %d local deliveries in INBOXes the checker could not open", i+1, r.Level, r.Run.Delivery.Unverified))
		}
	}
	add(RuleVerified, len(unverified) == 0, joinOr(unverified, "the checker could look for every delivery"))
	add(RuleDisclosure, cfg.Disclosure.System != "", orDash(cfg.Disclosure.System))
	return out
}

func why(r RunResult) string {
	switch {
	case r.Err != "":
		return "could not be carried out: " + r.Err
	case r.Run == nil:
		return "not run"
	}
	return string(r.Verdict()) + " " + r.Run.FailureReasons("stopped early")
}

func joinOr(items []string, none string) string {
	if len(items) == 0 {
		return none
	}
	s := items[0]
	for _, it := range items[1:] {
		s += "; " + it
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
