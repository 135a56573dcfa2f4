// Package sizing finds the highest compliant load of a workload on its
// server automatically: `mailbench size`. It runs the workload at one rate
// after another (each a whole run carried out by a campaign.RunFunc), growing
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
	"strings"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/sweep"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// Defaults of Options.
const (
	DefaultPrecision = 5.0 // percent of the found rate
	DefaultConfirm   = 2   // confirmation runs at the found rate
	DefaultMaxRuns   = 40
	DefaultMinRate   = 1.0 // sessions/hour: below it the search gives up
	// DefaultMaxLengthen is how many times an undecided step's measurement
	// is doubled before the step is reported undecided.
	DefaultMaxLengthen = 2
	Growth             = 2.0 // the factor of the exponential phase
)

// Axis is what a search varies.
type Axis string

// The axes of a search.
const (
	// AxisRate searches the session rate (sessions/hour), the connected
	// clients of [clients] held as configured.
	AxisRate Axis = "rate"
	// AxisConnected searches the connected clients (clients.connected) at
	// the config's session rate.
	AxisConnected Axis = "connected"
	// AxisUsers searches the users of [population]'s mix
	// (population.users): each step runs that many users of the mix, the
	// spec users' sessions and the profiles' clients and mail together.
	AxisUsers Axis = "users"
)

// Options configure Search.
type Options struct {
	// Axis is what the search varies; "": AxisRate.
	Axis Axis
	// Run carries out each run; required.
	Run campaign.RunFunc
	// Budget bounds the search's wall time; 0: none. A run is started only
	// when its planned length (warm-up + measurement + ramp-down + settle)
	// fits in what is left.
	Budget time.Duration
	// Precision is the width of the final bracket in percent of its lower
	// end; 0: DefaultPrecision.
	Precision float64
	// Start is the first level tried (sessions/hour, or connected
	// clients); 0: the config's target rate (clients.connected).
	Start float64
	// Confirm is the number of confirmation runs at the found rate; 0:
	// DefaultConfirm, negative: none.
	Confirm int
	// MaxRuns bounds the number of runs; 0: DefaultMaxRuns.
	MaxRuns int
	// MinRate: when a run at a rate below it fails, the search gives up
	// (nothing compliant); 0: DefaultMinRate (with AxisConnected: one
	// client).
	MinRate float64
	// MaxLengthen is how many times a step whose rows have too few
	// operations to decide is repeated with its measurement doubled; 0:
	// DefaultMaxLengthen, negative: never.
	MaxLengthen int
	// FixedUsers keeps the config's users in every step instead of rate ÷
	// load.sessions_per_user_hour; the result then has no users figure. A
	// config whose users come from a file always has fixed users.
	FixedUsers bool
	// FixedUsersWhy says why the users are fixed ("--users", "--fixed-users"),
	// for the result.
	FixedUsersWhy string
	// Prepare grows a real server's population before a step: it makes
	// users from (0-based) to cfg.Users.Count-1 ready (the top-up of
	// `mailbench init`; from = 0 tops up every user). nil: the population
	// is not prepared (a real server must then hold every user already).
	// Not called for the embedded target, which is made anew for each run.
	Prepare func(ctx context.Context, cfg *workload.Config, from int) (Prepared, error)
	// MemoryAvailable is the memory the machine has for a run (bytes); a
	// step whose plan needs more (workload.Plan.Memory) is not run: the
	// population or the cap cannot grow there. 0: unknown, not checked.
	MemoryAvailable int64
	// Z is the normal quantile of the confidence interval that decides a
	// row (compliance.Table.Decide); 0: compliance.DefaultZ (95%).
	Z float64
	// Now is the clock of the budget; nil: time.Now.
	Now func() time.Time
	// Log receives one line per run started and finished; nil: none.
	Log io.Writer
}

// Prepared is what growing the population before a step cost.
type Prepared struct {
	Users    int           // users made ready
	Messages int64         // messages appended
	Elapsed  time.Duration // wall time
}

// Purpose says why a probe was run.
type Purpose string

// The purposes of a probe.
const (
	First    Purpose = "start"     // the first rate
	Grow     Purpose = "grow"      // exponential phase, upwards
	Shrink   Purpose = "shrink"    // exponential phase, downwards (the first rate failed)
	Bisect   Purpose = "bisect"    // between the bracket's ends
	Confirm  Purpose = "confirm"   // again at the found rate, another seed
	RaiseCap Purpose = "raise-cap" // the same step again with the generator's cap raised
	Lengthen Purpose = "lengthen"  // the same step again with a longer measurement
)

// Outcome is what a probe showed.
type Outcome string

// The outcomes of a probe.
const (
	// Pass: every row passed with confidence, nothing lost, no drop, the
	// generator kept up.
	Pass Outcome = "pass"
	// Fail: the server failed at the rate (a row failed with confidence,
	// mail was lost, or the server slowed sessions until they were dropped).
	Fail Outcome = "fail"
	// Undecided: some rows had too few operations to decide, even after
	// lengthening; the rate is not shown compliant and bounds the capacity
	// from above, but is no evidence that the server failed.
	Undecided Outcome = "undecided"
	// Superseded: the step was run again (cap raised, measurement
	// lengthened); the later probe decides.
	Superseded Outcome = "superseded"
	// MailbenchBound: mailbench's own limits bounded the step (its
	// concurrency cap, its population, its memory budget, or the generator
	// itself); no evidence about the server.
	MailbenchBound Outcome = "bounded by mailbench"
	// Stopped: the run was stopped early.
	Stopped Outcome = "stopped"
	// Error: the run could not be carried out.
	Error Outcome = "error"
)

// decisive outcomes move the bracket.
func (o Outcome) decisive() bool { return o == Pass || o == Fail || o == Undecided }

// Probe is one run of the search.
type Probe struct {
	// Level is where the search put the step, on its axis: the rate, or
	// the connected clients.
	Level     float64
	Rate      float64 // target sessions/hour
	Connected int     // clients.connected
	Seed      int64   // its schedule seed (sweep.DeriveSeed(cfg.Seed, its 1-based number))
	Purpose   Purpose
	// Users is how many users (mailboxes) the step ran with; Cap its
	// load.max_concurrent_sessions; Measurement its measurement length.
	Users       int
	Cap         int
	Measurement time.Duration
	// Prepared is what growing the population cost before this probe
	// (nil: nothing was prepared).
	Prepared *Prepared
	Run      *report.Run // nil when the run could not be carried out
	Err      string
	Outcome  Outcome
	// Pass: Outcome is Pass.
	Pass bool
	// Reason says why it did not pass ("" when it did).
	Reason         string
	GeneratorBound bool
	// Undecided names the rows that had too few operations to decide.
	Undecided []string
	// Unsteady lists the functions whose p95 rose across the window of a
	// run that would otherwise have passed (compliance.Steadiness): such a
	// run is undecided, since its backlog may not yet have shown.
	Unsteady []string
}

// Result is a whole search.
type Result struct {
	Name, Config string
	Embedded     bool
	// Axis is what the search varied; Low, High and Start are on it
	// (sessions/hour, or connected clients). Rate is the session rate of
	// every step of an AxisConnected search.
	Axis        Axis
	Rate        float64
	PerUserHour float64 // load.sessions_per_user_hour: users = rate / it
	// Mix describes [population]'s mix for an AxisUsers search ("70%
	// heavy/desktop, 30% light/mobile").
	Mix string
	// FixedUsers: every step ran the config's population (FixedUsersWhy
	// says why); the result has no users figure.
	FixedUsers    bool
	FixedUsersWhy string
	Precision     float64 // percent, as used
	Budget        time.Duration
	Start         float64
	// Low is the highest rate that passed (0: none); High the lowest that
	// failed or stayed undecided above it (+Inf: none). The capacity is
	// Low; the true limit lies in [Low, High).
	Low, High float64
	// Converged: High is finite, Low > 0 and (High-Low)/Low ≤ Precision%.
	Converged bool
	// Confirmed: Converged and every confirmation run at Low passed.
	Confirmed bool
	// Stopped says why the search ended before it converged and was
	// confirmed ("" when it did): the budget, the run limit, the user, a run
	// that could not be carried out, no compliant rate, or mailbench's own
	// bound (MailbenchBound).
	Stopped string
	// MailbenchBound, when set, is why the search ended bounded by
	// mailbench, not by the server: its cap, population, memory or the
	// generator at the rate of Probes[Bounding]... there is no capacity of
	// the server above Low.
	MailbenchBound string
	Probes         []Probe
	// Bounding is the index in Probes of the decisive run at High (-1:
	// none), or of the run that mailbench's bound stopped.
	Bounding int
	// Elapsed is the search's wall time (by Options.Now).
	Elapsed time.Duration
	// PreparedUsers, PreparedMessages and PrepareTime total what growing the
	// population cost over the search.
	PreparedUsers    int
	PreparedMessages int64
	PrepareTime      time.Duration
}

// Users converts a rate to the users a step at it simulates: ⌈rate ÷
// sessions_per_user_hour⌉ (0 when the users are fixed: no users figure);
// on the users axis the level is the users.
func (r *Result) Users(rate float64) float64 {
	if r.Axis == AxisUsers {
		return rate
	}
	if r.PerUserHour <= 0 || r.FixedUsers {
		return 0
	}
	return math.Ceil(rate / r.PerUserHour)
}

// BracketPercent is (High-Low)/Low in percent; +Inf when either end is
// missing.
func (r *Result) BracketPercent() float64 {
	if r.Low <= 0 || math.IsInf(r.High, 1) {
		return math.Inf(1)
	}
	return 100 * (r.High - r.Low) / r.Low
}

// Found reports whether a capacity of the server was found: a passing rate
// with a failing (or undecided) one above it within the precision,
// confirmed, and not bounded by mailbench.
func (r *Result) Found() bool { return r.Converged && r.Confirmed && r.MailbenchBound == "" }

// LowProbe is the last decisive probe that passed at Low (nil: none).
func (r *Result) LowProbe() *Probe {
	for i := len(r.Probes) - 1; i >= 0; i-- {
		if p := &r.Probes[i]; p.Level == r.Low && p.Outcome == Pass {
			return p
		}
	}
	return nil
}

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
	switch o.Axis {
	case "":
		o.Axis = AxisRate
	case AxisRate, AxisConnected, AxisUsers:
	default:
		return o, fmt.Errorf("size: axis %q: want %q, %q or %q", o.Axis, AxisRate, AxisConnected, AxisUsers)
	}
	if o.Start < 0 || math.IsNaN(o.Start) || math.IsInf(o.Start, 0) || o.Start > workload.MaxSessionsPerHour {
		return o, fmt.Errorf("size: start rate %g: want > 0 and at most %g", o.Start, float64(workload.MaxSessionsPerHour))
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
	switch {
	case o.MaxLengthen == 0:
		o.MaxLengthen = DefaultMaxLengthen
	case o.MaxLengthen < 0:
		o.MaxLengthen = 0
	}
	if o.MinRate == 0 {
		o.MinRate = DefaultMinRate
		if o.Axis == AxisConnected || o.Axis == AxisUsers {
			o.MinRate = 1
		}
	}
	if o.Z == 0 {
		o.Z = compliance.DefaultZ
	}
	if !(o.Z > 0) {
		return o, fmt.Errorf("size: z %g: want > 0", o.Z)
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
	start, err := startRate(cfg, opts)
	if err != nil {
		return nil, err
	}
	fixed, why := opts.FixedUsers, opts.FixedUsersWhy
	if cfg.Users.File != "" {
		fixed, why = true, "the users come from users.file"
	}
	if fixed && why == "" {
		why = "fixed users"
	}
	s := &searcher{cfg: cfg, opts: opts, t0: opts.Now(), cap: cfg.Load.MaxConcurrent, res: &Result{
		Name: cfg.Name, Config: cfg.File, Embedded: cfg.Target.Embedded, PerUserHour: cfg.Load.SessionsPerUserHour,
		Axis: opts.Axis, Rate: cfg.TargetRate(), Mix: MixText(cfg),
		FixedUsers: fixed, FixedUsersWhy: why,
		Precision: opts.Precision, Budget: opts.Budget, Start: start, High: math.Inf(1), Bounding: -1,
	}}
	s.search(stop, kill, start)
	s.res.Elapsed = opts.Now().Sub(s.t0)
	return s.res, nil
}

// startRate is the first level of a search: --start, else the config's
// target rate (clients.connected).
func startRate(cfg *workload.Config, opts Options) (float64, error) {
	start := opts.Start
	if cfg.HasPopulation() != (opts.Axis == AxisUsers) {
		if opts.Axis == AxisUsers {
			return 0, errors.New("size: --axis users: the config has no [population] mix to count users of")
		}
		return 0, fmt.Errorf("size: the config's load is a [population] of users: search it with --axis users (not %s)", opts.Axis)
	}
	if opts.Axis == AxisUsers {
		if start == 0 {
			start = float64(cfg.PopulationUsers())
		}
		if !(start >= 1) {
			return 0, errors.New("size: --axis users: the config has no users and --start is not set")
		}
		return start, nil
	}
	if opts.Axis == AxisConnected {
		if start == 0 {
			start = float64(cfg.Clients.Connected)
		}
		if !(start >= 1) {
			return 0, errors.New("size: --axis connected: the config has no clients.connected and --start is not set")
		}
		if !(cfg.TargetRate() > 0) {
			return 0, errors.New("size: --axis connected: the config has no target rate to hold the clients beside")
		}
		return start, nil
	}
	if start == 0 {
		start = cfg.TargetRate()
	}
	if !(start > 0) {
		return 0, errors.New("size: the config has no target rate (load.sessions_per_hour or users × sessions_per_user_hour) and --start is not set")
	}
	return start, nil
}

type searcher struct {
	cfg      *workload.Config
	opts     Options
	t0       time.Time
	res      *Result
	cap      int // the generator's cap now: raised when it bounded a step
	prepared int // users made ready so far (real server)
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
				r.Stopped = fmt.Sprintf("no compliant %s: a run at %s did not pass and the next would be below the minimum of %s",
					r.Axis.noun(), r.LevelText(r.High), report.FormatFloat(s.opts.MinRate, 0))
				return
			}
			p, ok := s.step(stop, kill, rate, purpose)
			if !ok {
				return
			}
			if p.Pass {
				r.Low = max(r.Low, p.Level)
			} else if p.Level < r.High {
				r.High, r.Bounding = p.Level, len(r.Probes)-1
				if p.Level <= r.Low { // a failure at or below an earlier pass: that pass was luck
					r.Low = s.highestPassBelow(p.Level)
				}
			}
			rate, purpose = s.next()
		}
		r.Converged = true
		confirmed := true
		for range s.opts.Confirm {
			p, ok := s.step(stop, kill, r.Low, Confirm)
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

// highestPassBelow is the highest rate below limit whose every decisive
// probe passed, or 0.
func (s *searcher) highestPassBelow(limit float64) float64 {
	best := 0.0
	for _, p := range s.res.Probes {
		if p.Outcome == Pass && p.Level < limit && p.Level > best && s.allPassed(p.Level) {
			best = p.Level
		}
	}
	return best
}

func (s *searcher) allPassed(rate float64) bool {
	for _, p := range s.res.Probes {
		if p.Level == rate && p.Outcome.decisive() && !p.Pass {
			return false
		}
	}
	return true
}

// usersFor is the population of a step at rate: ⌈rate ÷
// sessions_per_user_hour⌉ users (the SPEC relation), or the config's when
// the users are fixed.
func (s *searcher) usersFor(rate float64) int {
	if s.res.FixedUsers || !(s.cfg.Load.SessionsPerUserHour > 0) {
		return s.cfg.Users.Count
	}
	return max(int(math.Ceil(rate/s.cfg.Load.SessionsPerUserHour)), 1)
}

// stepConfig is cfg at one step: its rate, connected clients, population,
// cap, measurement and schedule seed.
func (s *searcher) stepConfig(rate float64, connected, users, cap int, meas time.Duration, seed int64) *workload.Config {
	c := *s.cfg
	c.Load.SessionsPerHour = rate
	c.Clients.Connected = connected
	c.Load.MaxConcurrent = cap
	c.Phases.Measurement.Duration = meas
	c.ScheduleSeed = seed
	if !s.res.FixedUsers {
		c.Users.Count = users
		c.Delivery.WatchUsers = min(c.Delivery.WatchUsers, users)
	}
	return &c
}

// memoryError is why the plan of c does not fit in the memory available
// ("" when it does or the memory is unknown).
func (s *searcher) memoryError(c *workload.Config) string {
	if s.opts.MemoryAvailable <= 0 {
		return ""
	}
	plan, err := workload.NewPlan(c)
	if err != nil {
		return err.Error()
	}
	if err := plan.Memory.CheckMemory(s.opts.MemoryAvailable); err != nil {
		return err.Error()
	}
	return ""
}

// step decides one rate: it runs the rate, raising the generator's cap when
// the cap alone bounded it and lengthening the measurement while rows
// have too few operations to decide; every run is a Probe. ok is false
// when the search must end (budget, run limit, stopped, a run that could
// not be carried out, mailbench's bound).
func (s *searcher) step(stop, kill context.Context, level float64, purpose Purpose) (Probe, bool) {
	r := s.res
	level = roundRate(level)
	rate, connected := level, s.cfg.Clients.Connected
	if r.Axis == AxisConnected {
		rate, connected = r.Rate, int(level)
	}
	users := s.usersFor(rate)
	if connected > users && !r.FixedUsers {
		users = connected // every connected client is a user of its own
	}
	popUsers := 0
	if r.Axis == AxisUsers {
		popUsers = int(level)
		rate = PopulationRate(s.cfg, popUsers)
		users = max(popUsers, connected)
		if r.FixedUsers {
			users = s.cfg.Users.Count
		}
	}
	meas := s.cfg.Phases.Measurement.Duration
	lengthened := 0
	for {
		n := len(r.Probes) + 1
		c := s.stepConfig(rate, connected, users, s.cap, meas, sweep.DeriveSeed(s.cfg.Seed, n))
		if popUsers > 0 {
			c.Population.Users = popUsers
		}
		switch {
		case stop.Err() != nil || kill.Err() != nil:
			r.Stopped = "stopped by the user"
			return Probe{}, false
		case len(r.Probes) >= s.opts.MaxRuns:
			r.Stopped = fmt.Sprintf("the limit of %d runs was reached", s.opts.MaxRuns)
			return Probe{}, false
		case s.opts.Budget > 0 && s.opts.Now().Sub(s.t0)+plannedRun(c) > s.opts.Budget:
			r.Stopped = fmt.Sprintf("the budget of %v was used up (a run takes %v, %v had passed)",
				s.opts.Budget, plannedRun(c), s.opts.Now().Sub(s.t0).Round(time.Second))
			return Probe{}, false
		}
		if users > workload.MaxUsers {
			s.bound(-1, level, fmt.Sprintf("%d users are above mailbench's maximum of %d", users, workload.MaxUsers))
			return Probe{}, false
		}
		if popUsers > c.Users.Count {
			s.bound(-1, level, fmt.Sprintf("%d users of the mix need as many users, and the users are fixed at %d (%s)", popUsers, c.Users.Count, r.FixedUsersWhy))
			return Probe{}, false
		}
		if connected > c.Users.Count {
			s.bound(-1, level, fmt.Sprintf("%d connected clients need as many users, and the users are fixed at %d (%s)", connected, c.Users.Count, r.FixedUsersWhy))
			return Probe{}, false
		}
		if why := s.memoryError(c); why != "" {
			s.bound(-1, level, fmt.Sprintf("the memory budget cannot hold the step at %s with %d users: %s",
				r.stepText(level, rate, connected), users, why))
			return Probe{}, false
		}
		p := Probe{Level: level, Rate: rate, Connected: connected, Seed: c.ScheduleSeed, Purpose: purpose, Users: c.Users.Count, Cap: s.cap, Measurement: meas}
		if !c.Target.Embedded && s.opts.Prepare != nil && !r.FixedUsers && users > s.prepared {
			s.logf("size: run %d: growing the population to %d users (from user %d)", n, users, s.prepared+1)
			prep, err := s.opts.Prepare(stop, c, s.prepared)
			if err != nil && (stop.Err() != nil || kill.Err() != nil) {
				r.Stopped = "stopped by the user (while growing the population)"
				return Probe{}, false
			}
			if err != nil {
				s.bound(-1, level, fmt.Sprintf("the population could not grow to %d users for %s: %v",
					users, r.stepText(level, rate, connected), err))
				return Probe{}, false
			}
			s.logf("size: run %d: population ready: %d users, %d messages appended, %v", n, prep.Users, prep.Messages, prep.Elapsed.Round(time.Millisecond))
			p.Prepared = &prep
			s.prepared = users
			r.PreparedUsers += prep.Users
			r.PreparedMessages += prep.Messages
			r.PrepareTime += prep.Elapsed
		}
		s.logf("size: run %d: %s on %d users (%s), bracket %s", n, r.stepText(level, rate, connected), p.Users, purpose, s.bracketText())
		run, err := s.opts.Run(stop, kill, c)
		switch {
		case err != nil:
			p.Err, p.Outcome = err.Error(), Error
		case run == nil:
			p.Err, p.Outcome = "the runner returned no report", Error
		default:
			p.Run = run
			s.classify(&p, c)
		}
		r.Probes = append(r.Probes, p)
		idx := len(r.Probes) - 1
		if p.Err != "" {
			s.logf("size: run %d could not be carried out: %s", n, p.Err)
			r.Stopped = fmt.Sprintf("run %d (%s) could not be carried out: %s", n, r.stepText(level, rate, connected), p.Err)
			return p, false
		}
		verdict := strings.ToUpper(string(p.Outcome))
		if p.Reason != "" {
			verdict += ": " + p.Reason
		}
		s.logf("size: run %d: %s sessions/hour achieved, %s", n, report.FormatFloat(p.Run.AchievedSessionsPerHour, 0), verdict)
		if stop.Err() != nil || kill.Err() != nil || p.Outcome == Stopped {
			r.Stopped = "stopped by the user"
			return p, false
		}
		switch p.Outcome {
		case MailbenchBound:
			if (p.Run.DropsBy() == report.DropsGeneratorCap || p.Run.DropsBy() == report.NoDrops && mailDroppedAtCap(p.Run)) && s.cap > 0 {
				if next, why := s.raisedCap(c, p.Run); why == "" {
					r.Probes[idx].Outcome = Superseded
					s.logf("size: run %d: the generator's cap of %d bounded it, not the server: again with a cap of %d", n, s.cap, next)
					s.cap, purpose = next, RaiseCap
					continue
				} else {
					s.bound(idx, level, p.Reason+"; the cap cannot be raised: "+why)
					return p, false
				}
			}
			s.bound(idx, level, p.Reason)
			return p, false
		case Undecided:
			if lengthened < s.opts.MaxLengthen {
				r.Probes[idx].Outcome = Superseded
				lengthened++
				meas *= 2
				why := "too few operations to decide (" + strings.Join(p.Undecided, ", ") + ")"
				if len(p.Unsteady) > 0 {
					why = "not steady (" + strings.Join(p.Unsteady, "; ") + ")"
				}
				s.logf("size: run %d: %s: again with a %v measurement", n, why, meas)
				purpose = Lengthen
				continue
			}
		}
		return p, true
	}
}

// bound ends the search as bounded by mailbench at the probe idx (-1: the
// step could not even be run; the bounding run is then none).
func (s *searcher) bound(idx int, level float64, why string) {
	r := s.res
	r.MailbenchBound = why
	r.Stopped = "bounded by mailbench, not by the server, at " + r.LevelText(level) + ": " + why
	r.Bounding = idx
	s.logf("size: %s", r.Stopped)
}

// raisedCap is the generator's cap to retry a step with, or why it cannot be
// raised: four times the plan's concurrency (at least twice the cap), at
// most workload.MaxConcurrentSessions, within the memory budget.
func (s *searcher) raisedCap(c *workload.Config, run *report.Run) (int, string) {
	next := max(2*s.cap, int(math.Ceil(4*run.PlannedConcurrency)))
	next = min(next, workload.MaxConcurrentSessions)
	if next <= s.cap {
		return 0, fmt.Sprintf("it is at mailbench's maximum of %d", workload.MaxConcurrentSessions)
	}
	cc := *c
	cc.Load.MaxConcurrent = next
	if why := s.memoryError(&cc); why != "" {
		return 0, why
	}
	return next, ""
}

// mailDroppedAtCap reports whether a mail stream dropped mail at its cap,
// which follows load.max_concurrent_sessions (a quarter of it).
func mailDroppedAtCap(run *report.Run) bool {
	for _, st := range run.MailStreams() {
		if st.DroppedAtCap > 0 {
			return true
		}
	}
	return false
}

// classify sets p's outcome from its run (see Outcome); c is the step's
// config.
func (s *searcher) classify(p *Probe, c *workload.Config) {
	run := p.Run
	ev := run.Table.Decide(s.opts.Z)
	var failed []string
	for _, e := range ev.Named(compliance.Failed) {
		failed = append(failed, e.String())
	}
	for _, e := range ev.Named(compliance.Undecided) {
		p.Undecided = append(p.Undecided, e.Name)
	}
	dropped := false
	if pct, ok := run.DroppedPercent(); ok && run.MaxDroppedPercent > 0 && pct >= run.MaxDroppedPercent {
		dropped = true
	}
	// The mail streams' drops (inbound mail, the population's sent mail):
	// load the server was not offered, as the sessions' are.
	var droppedMail []string
	for _, st := range run.MailStreams() {
		if _, failing := run.StreamFailing(st); failing {
			droppedMail = append(droppedMail, run.StreamDropLine(st))
		}
	}
	var lost []string
	if d := run.Delivery; d != nil {
		lost = d.Failing()
		if d.PendingRemote > 0 && run.Shard == nil {
			lost = append(lost, fmt.Sprintf("%d remote deliveries not reconciled", d.PendingRemote))
		}
	}
	switch bound := run.GeneratorBound(); {
	case run.Partial || run.CouldNotRun != "":
		p.Outcome, p.Reason = Stopped, "stopped early: "+run.PartialReason
		if run.CouldNotRun != "" {
			p.Outcome, p.Reason = Error, "could not run: "+run.CouldNotRun
			p.Err = p.Reason
		}
	case len(bound) > 0:
		p.GeneratorBound = true
		p.Outcome, p.Reason = MailbenchBound, "GENERATOR-BOUND: "+strings.Join(bound, "; ")
	case len(failed) > 0:
		p.Outcome, p.Reason = Fail, "failing: "+strings.Join(failed, "; ")
	case len(lost) > 0:
		p.Outcome, p.Reason = Fail, "delivery accounting: "+strings.Join(lost, "; ")
	case dropped && run.DropsBy() == report.DropsServer:
		p.Outcome, p.Reason = Fail, "dropped sessions: "+run.DropLine()
	case len(droppedMail) > 0 && run.SessionsSlowed():
		p.Outcome, p.Reason = Fail, "dropped mail: "+strings.Join(droppedMail, "; ")
	case dropped:
		p.Outcome, p.Reason = MailbenchBound, "dropped sessions: "+run.DropLine()
	case len(droppedMail) > 0:
		p.Outcome, p.Reason = MailbenchBound, "dropped mail: "+strings.Join(droppedMail, "; ")
	case len(p.Undecided) > 0:
		var us []string
		for _, e := range ev.Named(compliance.Undecided) {
			us = append(us, e.String())
		}
		p.Outcome, p.Reason = Undecided, "too few operations to decide: "+strings.Join(us, "; ")
	default:
		drifts, err := compliance.Steadiness(run.Timeline, run.Table.Rules())
		for _, d := range drifts {
			p.Unsteady = append(p.Unsteady, d.String())
		}
		switch {
		case err != nil:
			p.Outcome, p.Reason = Undecided, "the steady-state rule could not be applied: "+err.Error()
		case len(drifts) > 0:
			p.Outcome, p.Reason = Undecided, "not steady: "+strings.Join(p.Unsteady, "; ")
		default:
			p.Outcome, p.Pass = Pass, true
		}
	}
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

// noun names what the axis counts.
func (a Axis) noun() string {
	switch a {
	case AxisConnected:
		return "connected clients"
	case AxisUsers:
		return "users of the mix"
	}
	return "rate"
}

// LevelText renders a level of the search's axis: "11,250 sessions/hour",
// "4,200 connected clients".
func (r *Result) LevelText(level float64) string {
	switch r.Axis {
	case AxisConnected:
		return report.FormatFloat(level, 0) + " connected clients"
	case AxisUsers:
		return report.FormatFloat(level, 0) + " users of the mix"
	}
	return report.FormatFloat(level, 0) + " sessions/hour"
}

// stepText renders a step: its rate, and its connected clients when it
// has any; on the users axis its users of the mix (level) first.
func (r *Result) stepText(level, rate float64, connected int) string {
	if r.Axis == AxisUsers {
		t := report.FormatFloat(level, 0) + " users of the mix"
		if rate > 0 {
			t += " (" + report.FormatFloat(rate, 0) + " SPEC sessions/hour)"
		}
		return t
	}
	t := report.FormatFloat(rate, 0) + " sessions/hour"
	if connected > 0 {
		t += " with " + report.FormatCount(int64(connected)) + " connected clients"
	}
	return t
}

// CurvePoint is one run on the load curve.
type CurvePoint struct {
	Level             float64 // on the search's axis
	Connected         int
	Rate, Achieved    float64
	BandLow, BandHigh float64 // the target's 95% Poisson band of the achieved rate
	Users             int
	Pass              bool
	Outcome           Outcome
	Purpose           Purpose
	P95               map[string]time.Duration // per function row that ran
	Compliant         map[string]float64       // percent within the limit, per function row that ran
	// Server is what was observed of the server ([server]): each CPU,
	// disk and memory figure's mean over the run's measurement window.
	Server map[string]float64
}

// kneeFigure reports whether a server figure is one the curve and the knee
// line show: the CPU of the host and of each process group (the
// generator's too), the busiest disk and the memory used.
func kneeFigure(name string) bool {
	return name == "host.cpu_percent" || strings.HasSuffix(name, ".cpu_cores") && name != "host.cpu_cores" ||
		name == "host.disk_util_percent" || name == "host.mem_used_percent"
}

// Curve is every run that produced a report, by rate (then by order run):
// the p95 and the compliant share of each function against load.
func (r *Result) Curve() []CurvePoint {
	var out []CurvePoint
	for _, p := range r.Probes {
		if p.Run == nil {
			continue
		}
		cp := CurvePoint{Level: p.Level, Connected: p.Connected, Rate: p.Rate, Achieved: p.Run.AchievedSessionsPerHour, Users: p.Users, Pass: p.Pass, Outcome: p.Outcome,
			Purpose: p.Purpose, P95: map[string]time.Duration{}, Compliant: map[string]float64{}}
		cp.BandLow, cp.BandHigh = p.Run.AchievedBand()
		if cp.Users == 0 {
			cp.Users = p.Run.Users
		}
		for _, row := range p.Run.Table.Rows {
			if row.Operations > 0 {
				cp.P95[string(row.Function)] = row.P95
				cp.Compliant[string(row.Function)] = 100 * float64(row.WithinLimit) / float64(row.Operations)
			}
		}
		if s := p.Run.Server; s != nil {
			cp.Server = map[string]float64{}
			for _, f := range s.Figures {
				if kneeFigure(f.Name) {
					cp.Server[f.Name] = f.Mean
				}
			}
		}
		out = append(out, cp)
	}
	slices.SortStableFunc(out, func(a, b CurvePoint) int {
		switch {
		case a.Level < b.Level:
			return -1
		case a.Level > b.Level:
			return 1
		}
		return 0
	})
	return out
}

// PopulationRate is the SPEC session rate of cfg's mix at users users:
// its spec users × load.sessions_per_user_hour (0 without spec users).
func PopulationRate(cfg *workload.Config, users int) float64 {
	c := *cfg
	c.Population.Users = users
	return c.TargetRate()
}

// MixText describes cfg's mix by share: "70% heavy/desktop, 30%
// light/mobile"; "" without [population].
func MixText(cfg *workload.Config) string {
	total := 0.0
	for _, m := range cfg.Population.Mix {
		total += m.Share
	}
	var parts []string
	for _, m := range cfg.Population.Mix {
		parts = append(parts, report.FormatFloat(100*m.Share/total, 0)+"% "+m.Users+"/"+m.Client)
	}
	return strings.Join(parts, ", ")
}
