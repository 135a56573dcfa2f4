package sizing

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// planMaxSteps bounds the climb a SearchPlan lists.
const planMaxSteps = 16

// PlanStep is one rate of the climb as the search would run it.
type PlanStep struct {
	Rate      float64
	Connected int // clients.connected
	Users     int
	Messages  int64 // the users' mailboxes before the step, from the seed
	// Memory is the step's estimate (workload.Plan.Memory); Fits is false
	// when it exceeds the memory available, with Why.
	Memory workload.MemoryEstimate
	Fits   bool
	Why    string
}

// SearchPlan is what a search would need before it runs: the users and
// messages each step of its exponential climb initialises, its memory, and
// the ceiling where mailbench's own limits (memory, the budget, the run
// limit) would end the climb. Its figures are the plan's, not measurements.
type SearchPlan struct {
	Name          string
	Embedded      bool
	FixedUsers    bool
	FixedUsersWhy string
	PerUserHour   float64
	RunLength     time.Duration // one run's planned wall time
	Budget        time.Duration
	MaxRuns       int
	Steps         []PlanStep
	// Mix is [population]'s mix on the users axis ("" on the others).
	Mix string
	// Ceiling says what ends the climb in the plan.
	Ceiling string
}

// PlanSearch lays out the climb of a search of cfg with opts: the start
// rate doubled until the memory budget, the time budget or the run limit
// would stop it (at most 16 steps). It doesn't perform I/O.
func PlanSearch(cfg *workload.Config, opts Options) (*SearchPlan, error) {
	opts, err := CheckOptions(opts)
	if err != nil {
		return nil, err
	}
	start, err := startRate(cfg, opts)
	if err != nil {
		return nil, err
	}
	s := &searcher{cfg: cfg, opts: opts, cap: cfg.Load.MaxConcurrent, res: &Result{FixedUsers: opts.FixedUsers || cfg.Users.File != "", Axis: opts.Axis, Rate: cfg.TargetRate(), Mix: MixText(cfg)}}
	sp := &SearchPlan{Name: cfg.Name, Embedded: cfg.Target.Embedded, FixedUsers: s.res.FixedUsers, FixedUsersWhy: opts.FixedUsersWhy,
		PerUserHour: cfg.Load.SessionsPerUserHour, RunLength: plannedRun(cfg), Budget: opts.Budget, MaxRuns: opts.MaxRuns}
	if cfg.Users.File != "" {
		sp.FixedUsersWhy = "the users come from users.file"
	}
	if opts.Axis == AxisUsers {
		sp.Mix = MixText(cfg)
	}
	var msgs int64
	counted := 0
	level := roundRate(start)
	for k := 0; ; k++ {
		rate, connected := level, cfg.Clients.Connected
		if opts.Axis == AxisConnected {
			rate, connected = s.res.Rate, int(level)
		}
		switch {
		case k >= planMaxSteps:
			sp.Ceiling = fmt.Sprintf("the plan lists %d doublings; the search goes on until a step fails", planMaxSteps)
			return sp, nil
		case k >= opts.MaxRuns:
			sp.Ceiling = fmt.Sprintf("the limit of %d runs", opts.MaxRuns)
			return sp, nil
		case opts.Budget > 0 && time.Duration(k+1)*sp.RunLength > opts.Budget:
			sp.Ceiling = fmt.Sprintf("the budget of %v (a run takes %v)", opts.Budget, sp.RunLength)
			return sp, nil
		}
		users := s.usersFor(rate)
		if connected > users && !s.res.FixedUsers {
			users = connected
		}
		popUsers := 0
		if opts.Axis == AxisUsers {
			popUsers = int(level)
			rate, users = PopulationRate(cfg, popUsers), max(popUsers, connected)
			if s.res.FixedUsers {
				users = cfg.Users.Count
			}
		}
		if users > workload.MaxUsers {
			sp.Ceiling = fmt.Sprintf("mailbench's maximum of %d users", workload.MaxUsers)
			return sp, nil
		}
		c := s.stepConfig(rate, connected, users, s.cap, cfg.Phases.Measurement.Duration, 1)
		if popUsers > 0 {
			c.Population.Users = popUsers
		}
		if cfg.Users.File == "" {
			for i := counted; i < users; i++ {
				// the login as workload.Config.LoadUsers makes it (no password needed)
				login := fmt.Sprintf(c.Users.Pattern, i+1)
				if c.Users.LoginWithDomain {
					login += "@" + c.Users.LocalDomain
				}
				for _, mb := range mailboxes.For(c, login) {
					msgs += int64(mb.Messages)
				}
			}
			counted = max(counted, users)
		}
		st := PlanStep{Rate: rate, Connected: connected, Users: users, Messages: msgs, Fits: true}
		if plan, err := workload.NewPlan(c); err == nil {
			st.Memory = plan.Memory
		}
		if why := s.memoryError(c); why != "" {
			st.Fits, st.Why = false, why
			sp.Steps = append(sp.Steps, st)
			sp.Ceiling = fmt.Sprintf("the memory budget at %s: the search would end there, bounded by mailbench", s.res.stepText(level, rate, connected))
			return sp, nil
		}
		sp.Steps = append(sp.Steps, st)
		level = roundRate(level * Growth)
	}
}

// WriteText renders the plan; it performs I/O only on w.
func (sp *SearchPlan) WriteText(w io.Writer) error {
	var b strings.Builder
	target := "a real server: the new users of each step are topped up (as init does) before it"
	if sp.Embedded {
		target = "the embedded target: made anew with each step's users"
	}
	fmt.Fprintf(&b, "Sizing plan: %q on %s\n", sp.Name, target)
	switch {
	case sp.Mix != "":
		fmt.Fprintf(&b, "Users: the search's level, users of the mix (%s); sessions/hour: its spec users' SPEC sessions\n", sp.Mix)
	case sp.FixedUsers:
		fmt.Fprintf(&b, "Users: fixed (%s): every step runs the config's users; the result has no users figure\n", sp.FixedUsersWhy)
	default:
		fmt.Fprintf(&b, "Users: rate ÷ %s sessions per user-hour in every step\n", report.FormatFloat(sp.PerUserHour, 1))
	}
	fmt.Fprintf(&b, "One run takes %v (warm-up + measurement + ramp-down + settle); at most %d runs", sp.RunLength, sp.MaxRuns)
	if sp.Budget > 0 {
		fmt.Fprintf(&b, " within %v", sp.Budget)
	}
	b.WriteString(". These figures are the plan's, not measurements.\n\n")
	clients := slices.ContainsFunc(sp.Steps, func(st PlanStep) bool { return st.Connected > 0 })
	fmt.Fprintf(&b, "%-16s ", "sessions/hour")
	if clients {
		fmt.Fprintf(&b, "%12s ", "connected")
	}
	fmt.Fprintf(&b, "%12s %14s %12s  %s\n", "users", "messages", "memory", "")
	for _, st := range sp.Steps {
		mem := "-"
		if st.Memory.Total > 0 {
			mem = workload.FormatBytes(st.Memory.Total)
		}
		note := ""
		if !st.Fits {
			note = "does not fit: " + st.Why
		}
		fmt.Fprintf(&b, "%-16s ", report.FormatFloat(st.Rate, 0))
		if clients {
			fmt.Fprintf(&b, "%12s ", report.FormatCount(int64(st.Connected)))
		}
		fmt.Fprintf(&b, "%12s %14s %12s  %s\n", report.FormatCount(int64(st.Users)), report.FormatCount(st.Messages), mem, note)
	}
	if sp.Ceiling != "" {
		fmt.Fprintf(&b, "\nCeiling of the climb: %s.\n", sp.Ceiling)
	}
	if len(sp.Steps) > 0 {
		last := sp.Steps[len(sp.Steps)-1]
		fmt.Fprintf(&b, "The highest step needs %s users and %s messages in their mailboxes.\n",
			report.FormatCount(int64(last.Users)), report.FormatCount(last.Messages))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
