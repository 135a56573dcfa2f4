// Package sweep runs one workload at several load levels, each several
// times, and puts the levels side by side: what users compare when they
// look for a server's capacity (the OpenKETA-style load series) or certify
// a result the SPEC way (three iterations, the median reported). It is
// `mailbench sweep`.
//
// A level is a percentage of the workload's target rate; every level ×
// iteration is one whole run carried out by a campaign.RunFunc (orchestrator.Run in the
// CLI, see Orchestrated), one after the other: level by level, each
// level's iterations in a row. sweep derives the configurations, collects
// the reports, and computes medians, sums and verdicts. Nothing in this
// package performs I/O except through the campaign.RunFunc and on the io.Writer
// given to the renderers.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// DefaultLevels are the levels of a sweep without Options.Levels, in
// percent of the target rate.
var DefaultLevels = []float64{80, 100, 120}

// The levels the SPEC-style rule requires to pass in every iteration.
const (
	RequiredLow  = 80.0
	RequiredHigh = 100.0
)

// Options configure Run.
type Options struct {
	// Levels are percentages of the config's target rate (> 0), or with
	// Axis AxisConnected of its clients.connected, run in the order given;
	// nil means DefaultLevels. Duplicates are an error.
	Levels []float64
	// Axis is what the levels vary: AxisRate (the default: the session
	// rate) or AxisConnected (the connected clients, at the config's rate).
	Axis string
	// Iterations per level (default 1; SPEC-style certification uses 3).
	Iterations int
	// Run carries out each run; required.
	Run campaign.RunFunc
	// Log receives one line per run started and finished; nil: none.
	Log io.Writer
}

// Verdict is the outcome of one iteration.
type Verdict string

// The verdicts of an iteration.
const (
	Pass    Verdict = "PASS"    // complete and compliant
	Fail    Verdict = "FAIL"    // complete, not compliant
	Partial Verdict = "PARTIAL" // stopped before the end of its window: not a valid result
	Error   Verdict = "ERROR"   // could not be carried out
	NotRun  Verdict = "-"       // the sweep stopped before it
)

// Iteration is one run of a level.
type Iteration struct {
	Run *report.Run // nil when the run failed or did not happen
	Err string      // why the run could not be carried out
}

// Verdict is the iteration's outcome.
func (it Iteration) Verdict() Verdict {
	switch {
	case it.Err != "":
		return Error
	case it.Run == nil:
		return NotRun
	case it.Run.Partial:
		return Partial
	case it.Run.Table.Compliant:
		return Pass
	default:
		return Fail
	}
}

// The axes a sweep can vary.
const (
	AxisRate      = "rate"
	AxisConnected = "connected"
	// AxisUsers varies the users of [population]'s mix (population.users).
	AxisUsers = "users"
)

// Level is one load level and its iterations. The aggregate fields are
// computed over the iterations that produced a report (Run != nil, partial
// ones included); medians are defined at Median.
type Level struct {
	Percent       float64 // of the base rate, or of the base connected clients
	TargetPerHour float64 // Percent × the base rate / 100 (the base rate on the connected axis)
	// Connected is the level's clients.connected; Held the median of the
	// clients its runs held at the end of the measurement window.
	Connected int
	Held      float64
	// PopulationUsers is the level's users of the mix (users axis).
	PopulationUsers int
	Iterations      []Iteration

	AchievedPerHour float64 // median
	EquivalentUsers float64 // median; 0 when a run has no users figure (report.Run.UsersFigure)
	// Users is the most users (mailboxes) a run of the level drew from;
	// UsersFigure: every run simulated the users its rate stands for.
	Users         int
	UsersFigure   bool
	Late, Dropped int64 // sums
	// WorstPercent is the median over iterations of the lowest % compliant
	// of any function row that ran; WorstFunction is the function of that
	// row in the middle iteration (the lower middle one of an even count),
	// "" when no row ran.
	WorstPercent  float64
	WorstFunction string
	ErrorPercent  float64 // median of the error rate
	// Lost, Duplicated and Corrupted sum the delivery reconciliations;
	// DeliveryMeasured is false when no iteration had one.
	Lost, Duplicated, Corrupted int64
	DeliveryMeasured            bool
}

// Passed reports whether every iteration of l was run and passed.
func (l *Level) Passed() bool {
	if len(l.Iterations) == 0 {
		return false
	}
	for _, it := range l.Iterations {
		if it.Verdict() != Pass {
			return false
		}
	}
	return true
}

// Complete reports whether every iteration of l produced a full report.
func (l *Level) Complete() bool {
	for _, it := range l.Iterations {
		if v := it.Verdict(); v == NotRun || v == Partial {
			return false
		}
	}
	return len(l.Iterations) > 0
}

// Result is a whole sweep.
type Result struct {
	Name     string // the workload's name
	Config   string // the workload file
	Embedded bool
	BaseRate float64 // the config's target sessions/hour: 100% on the rate axis
	Axis     string  // AxisRate or AxisConnected
	// BaseConnected is the config's clients.connected: 100% on the
	// connected axis.
	BaseConnected int
	// BaseUsers is the config's users of [population]'s mix: 100% on the
	// users axis.
	BaseUsers  int
	Iterations int     // per level
	Levels     []Level // in the order run
	// Partial is set when the sweep was stopped before its last run;
	// PartialReason says where.
	Partial       bool
	PartialReason string
}

// Capacity is the highest level (by percent) that passed in every
// iteration; ok is false when none did.
func (r *Result) Capacity() (l *Level, ok bool) {
	for i := range r.Levels {
		if r.Levels[i].Passed() && (l == nil || r.Levels[i].Percent > l.Percent) {
			l = &r.Levels[i]
		}
	}
	return l, l != nil
}

// SPECRule reports whether the levels RequiredLow (80%) and RequiredHigh
// (100%) are in the sweep and passed in every iteration; why explains a
// failure ("" when it passes).
func (r *Result) SPECRule() (ok bool, why string) {
	for _, pct := range []float64{RequiredLow, RequiredHigh} {
		i := slices.IndexFunc(r.Levels, func(l Level) bool { return l.Percent == pct })
		switch {
		case i < 0:
			return false, fmt.Sprintf("the sweep has no %g%% level", pct)
		case !r.Levels[i].Passed():
			return false, fmt.Sprintf("the %g%% level did not pass in every iteration", pct)
		}
	}
	return true, ""
}

// CheckOptions validates o's levels and iterations (after defaults) and
// returns them. It doesn't perform I/O.
// The bounds of Options: each is far beyond a useful campaign, and each
// keeps a typo from asking for one that never ends.
const (
	MaxIterations   = 100
	MaxLevels       = 100
	MaxLevelPercent = 10000
)

func CheckOptions(o Options) (levels []float64, iterations int, err error) {
	levels, iterations = o.Levels, o.Iterations
	if levels == nil {
		levels = DefaultLevels
	}
	if iterations == 0 {
		iterations = 1
	}
	if len(levels) == 0 {
		return nil, 0, errors.New("sweep: no levels")
	}
	if iterations < 0 || iterations > MaxIterations {
		return nil, 0, fmt.Errorf("sweep: --iterations %d: out of range: must be 1 to %d", iterations, MaxIterations)
	}
	if len(levels) > MaxLevels {
		return nil, 0, fmt.Errorf("sweep: --levels: %d levels: at most %d", len(levels), MaxLevels)
	}
	for i, l := range levels {
		if !(l > 0) || math.IsInf(l, 0) || l > MaxLevelPercent {
			return nil, 0, fmt.Errorf("sweep: level %g%%: out of range: a level must be a positive percentage, at most %g%%", l, float64(MaxLevelPercent))
		}
		if slices.Contains(levels[:i], l) {
			return nil, 0, fmt.Errorf("sweep: level %g%% appears twice", l)
		}
	}
	return slices.Clone(levels), iterations, nil
}

// LevelConfig is cfg with its target rate set to pct% of base; cfg is not
// modified. It doesn't perform I/O.
func LevelConfig(cfg *workload.Config, base, pct float64) *workload.Config {
	c := *cfg // Load is a value: changing it leaves cfg alone
	c.Load.SessionsPerHour = base * pct / 100
	return &c
}

// ConnectedLevel is the number of connected clients of level pct% of
// base, at least 1.
func ConnectedLevel(base int, pct float64) int {
	return max(int(math.Round(float64(base)*pct/100)), 1)
}

// UsersLevelConfig is cfg with n users of its mix, on at least as many
// users.
func UsersLevelConfig(cfg *workload.Config, n int) *workload.Config {
	c := *cfg
	c.Population.Users = n
	if c.Users.File == "" {
		c.Users.Count = max(c.Users.Count, n)
	}
	return &c
}

// Run carries out every level × iteration of cfg and returns the sweep. A
// run that fails gets an Iteration with Err set and the sweep continues.
// Cancelling stop ends the current run (which the campaign.RunFunc drains into a
// partial report) and the sweep: the runs not carried out are NotRun and
// the result is marked Partial. Cancelling kill cuts the current run.
// The error is non-nil only for bad options or a config without a target
// rate.
func Run(stop, kill context.Context, cfg *workload.Config, opts Options) (*Result, error) {
	if opts.Run == nil {
		return nil, errors.New("sweep: no RunFunc")
	}
	if cfg == nil {
		return nil, errors.New("sweep: no config")
	}
	levels, iterations, err := CheckOptions(opts)
	if err != nil {
		return nil, err
	}
	base := cfg.TargetRate()
	if cfg.HasPopulation() != (opts.Axis == AxisUsers) {
		if opts.Axis == AxisUsers {
			return nil, errors.New("sweep: the users axis needs a [population] mix in the config")
		}
		return nil, fmt.Errorf("sweep: the config's load is a [population] of users: sweep it with --axis users")
	}
	if !(base > 0) && opts.Axis != AxisUsers {
		return nil, errors.New("sweep: the config has no target rate (load.sessions_per_hour or users × sessions_per_user_hour)")
	}
	switch opts.Axis {
	case "", AxisRate, AxisUsers:
	case AxisConnected:
		if cfg.Clients.Connected <= 0 {
			return nil, errors.New("sweep: the connected axis needs clients.connected in the config (its 100%)")
		}
	default:
		return nil, fmt.Errorf("sweep: axis %q: want %q, %q or %q", opts.Axis, AxisRate, AxisConnected, AxisUsers)
	}
	logf := func(format string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", a...)
		}
	}
	axis := opts.Axis
	if axis == "" {
		axis = AxisRate
	}
	res := &Result{Name: cfg.Name, Config: cfg.File, Embedded: cfg.Target.Embedded, BaseRate: base, Axis: axis,
		BaseConnected: cfg.Clients.Connected, Iterations: iterations}
	if axis == AxisUsers {
		res.BaseUsers = cfg.PopulationUsers()
	}
	total, n := len(levels)*iterations, 0
	for _, pct := range levels {
		lv := Level{Percent: pct, TargetPerHour: base * pct / 100, Connected: cfg.Clients.Connected, Iterations: make([]Iteration, iterations)}
		levelCfg := func() *workload.Config { return LevelConfig(cfg, base, pct) }
		if axis == AxisUsers {
			lv.PopulationUsers = ConnectedLevel(res.BaseUsers, pct)
			levelCfg = func() *workload.Config { return UsersLevelConfig(cfg, lv.PopulationUsers) }
			lv.TargetPerHour = levelCfg().TargetRate()
		}
		if axis == AxisConnected {
			lv.TargetPerHour, lv.Connected = base, ConnectedLevel(cfg.Clients.Connected, pct)
			levelCfg = func() *workload.Config {
				c := *cfg
				c.Clients.Connected = lv.Connected
				return &c
			}
		}
		for i := range iterations {
			if res.Partial {
				break
			}
			if stop.Err() != nil || kill.Err() != nil {
				res.Partial, res.PartialReason = true, fmt.Sprintf("stopped before level %g%% iteration %d", pct, i+1)
				break
			}
			n++
			logf("sweep: run %d/%d: level %g%% (%.0f sessions/hour, %d connected clients), iteration %d/%d", n, total, pct, lv.TargetPerHour, lv.Connected, i+1, iterations)
			run, err := opts.Run(stop, kill, levelCfg())
			switch {
			case err != nil:
				lv.Iterations[i].Err = err.Error()
				logf("sweep: level %g%% iteration %d: %v", pct, i+1, err)
			case run == nil:
				lv.Iterations[i].Err = "the runner returned no report"
			default:
				lv.Iterations[i].Run = run
				logf("sweep: level %g%% iteration %d: %.0f sessions/hour, %s", pct, i+1, run.AchievedSessionsPerHour, lv.Iterations[i].Verdict())
			}
			if stop.Err() != nil || kill.Err() != nil {
				res.Partial, res.PartialReason = true, fmt.Sprintf("stopped during level %g%% iteration %d", pct, i+1)
			}
		}
		lv.aggregate()
		res.Levels = append(res.Levels, lv)
	}
	return res, nil
}

// aggregate computes l's medians and sums from its iterations.
func (l *Level) aggregate() {
	var achieved, users, errPct, held []float64
	type worst struct {
		pct float64
		fn  string
	}
	var worsts []worst
	for _, it := range l.Iterations {
		r := it.Run
		if r == nil {
			continue
		}
		achieved = append(achieved, r.AchievedSessionsPerHour)
		if r.Clients != nil {
			held = append(held, float64(r.Clients.Held))
		}
		users = append(users, r.EquivalentUsers)
		if len(users) == 1 {
			l.UsersFigure = true
		}
		_, fig := r.UsersFigure()
		l.UsersFigure = l.UsersFigure && fig
		l.Users = max(l.Users, r.Users)
		errPct = append(errPct, r.Table.Errors.Percent)
		l.Late += r.SessionsLate
		l.Dropped += r.SessionsDropped
		if row, ok := r.WorstRow(); ok {
			worsts = append(worsts, worst{row.PercentCompliant, string(row.Function)})
		}
		if d := r.Delivery; d != nil {
			l.DeliveryMeasured = true
			l.Lost += d.Lost
			l.Duplicated += d.Duplicated
			l.Corrupted += d.Corrupted
		}
	}
	l.AchievedPerHour = Median(achieved)
	if len(held) > 0 {
		l.Held = Median(held)
	}
	l.EquivalentUsers = Median(users)
	if !l.UsersFigure {
		l.EquivalentUsers = 0
	}
	l.ErrorPercent = Median(errPct)
	if len(worsts) > 0 {
		pcts := make([]float64, len(worsts))
		for i, w := range worsts {
			pcts[i] = w.pct
		}
		l.WorstPercent = Median(pcts)
		slices.SortStableFunc(worsts, func(a, b worst) int { return cmpFloat(a.pct, b.pct) })
		l.WorstFunction = worsts[(len(worsts)-1)/2].fn
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Median is the middle value of vs: of an odd count the middle one after
// sorting, of an even count the mean of the two middle ones; 0 for none.
// vs is not modified. It doesn't perform I/O.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Verdict is the level's outcome: PASS when every iteration passed, FAIL
// when one failed or could not be carried out, INCOMPLETE otherwise (an
// iteration stopped early or not run).
func (l *Level) Verdict() string {
	if l.Passed() {
		return "PASS"
	}
	for _, it := range l.Iterations {
		if v := it.Verdict(); v == Fail || v == Error {
			return "FAIL"
		}
	}
	return "INCOMPLETE"
}

// UsersText renders the level's population: "2,500" when its runs
// simulated the users their rate stands for, "100 mailboxes" when not, "-"
// when not recorded.
func (l *Level) UsersText() string {
	switch {
	case l.UsersFigure:
		return report.FormatCount(int64(math.Floor(l.EquivalentUsers)))
	case l.Users > 0:
		return report.FormatCount(int64(l.Users)) + " mailboxes"
	}
	return "-"
}
