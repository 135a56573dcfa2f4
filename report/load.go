package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// UsersTolerance is how far (a share of rate ÷ sessions_per_user_hour) the
// users a run simulated may be from the users its target rate stands for
// for the run to carry a users figure; at least one user either way, so
// that ⌈rate ÷ 4.8⌉ users always qualify.
const UsersTolerance = 0.02

// SlowSessionFactor: when the measured mean session length exceeds the
// planned one by this factor, the server slowed the sessions down, and the
// concurrency (and any drop at the generator's cap) is the server's doing.
const SlowSessionFactor = 1.5

// UsersFigure returns the users figure of the run and whether it has one:
// it does when the run simulated as many users as its target rate stands
// for at its sessions per user-hour (the SPEC relation, users = rate ÷
// 4.8), within UsersTolerance. A run of 1,000 mailboxes at 400,000
// sessions/hour has none: it never simulated 83,333 users.
func (r *Run) UsersFigure() (int, bool) {
	if r.Users <= 0 || !(r.SessionsPerUserHour > 0) || !(r.TargetSessionsPerHour > 0) {
		return 0, false
	}
	want := r.TargetSessionsPerHour / r.SessionsPerUserHour
	return r.Users, math.Abs(float64(r.Users)-want) <= max(1, UsersTolerance*want)
}

// SessionsPerUser is the target rate per simulated user and hour (0 when
// the users are not known).
func (r *Run) SessionsPerUser() float64 {
	if r.Users <= 0 {
		return 0
	}
	return r.TargetSessionsPerHour / float64(r.Users)
}

// LoadLine says what load the run offered on what population, in one
// line: "14,400 sessions/hour ≡ 3,000 users (at 4.8 sessions per
// user-hour)" when the run simulated its users, else "14,400 sessions/hour
// on 50 mailboxes (288 sessions per user-hour; not a users figure)".
func (r *Run) LoadLine(rate float64) string {
	s := FormatWhole(rate) + " sessions/hour"
	if u, ok := r.UsersFigure(); ok {
		return s + " ≡ " + fmtInt(int64(u)) + " users (at " + trimFloat(r.SessionsPerUserHour) + " sessions per user-hour)"
	}
	if r.Users > 0 {
		return s + " on " + fmtInt(int64(r.Users)) + " mailboxes (" + trimFloat(math.Round(r.SessionsPerUser()*10)/10) +
			" sessions per user-hour; not a users figure)"
	}
	return s + " (users not recorded)"
}

// ObservedConcurrency is the mean number of sessions open at once in the
// window, by Little's law over what was measured: sessions started per
// second × MeanSessionDuration (0 when not measured).
func (r *Run) ObservedConcurrency() float64 {
	if r.Measurement <= 0 || r.MeanSessionDuration <= 0 {
		return 0
	}
	return float64(r.SessionsStarted) / r.Measurement.Seconds() * r.MeanSessionDuration.Seconds()
}

// SessionsSlowed reports whether the sessions lasted SlowSessionFactor
// times their planned length or more: the server slowed them down.
func (r *Run) SessionsSlowed() bool {
	return r.PlannedSessionDuration > 0 && r.MeanSessionDuration > 0 &&
		float64(r.MeanSessionDuration) >= SlowSessionFactor*float64(r.PlannedSessionDuration)
}

// DropCause is who caused a run's dropped sessions.
type DropCause string

// The causes of dropped sessions.
const (
	// NoDrops: every session due started.
	NoDrops DropCause = ""
	// DropsServer: the sessions lasted far longer than planned
	// (SessionsSlowed), which filled the generator's cap or the user pool:
	// the server's doing.
	DropsServer DropCause = "server"
	// DropsGeneratorCap: the generator's cap (load.max_concurrent_sessions)
	// at the planned session length: mailbench's own limit.
	DropsGeneratorCap DropCause = "generator cap"
	// DropsPopulation: every user was busy at the planned session length:
	// the population is too small for the rate (mailbench's, not the
	// server's).
	DropsPopulation DropCause = "population"
)

// DropsBy attributes the run's dropped sessions: to the server when the
// sessions were slowed down (SessionsSlowed), otherwise to the generator's
// cap or the population, whichever dropped more.
func (r *Run) DropsBy() DropCause {
	switch {
	case r.SessionsDropped <= 0:
		return NoDrops
	case r.SessionsSlowed():
		return DropsServer
	case r.SessionsDroppedUsersBusy > r.SessionsDroppedAtCap:
		return DropsPopulation
	}
	return DropsGeneratorCap
}

// DropCounts lists the dropped sessions by cause, e.g. "3 at the
// generator's cap of 200 (load.max_concurrent_sessions)" (none when
// nothing was dropped).
func (r *Run) DropCounts() []string {
	var parts []string
	if r.SessionsDropped <= 0 {
		return nil
	}
	if r.SessionsDroppedAtCap > 0 {
		parts = append(parts, fmt.Sprintf("%s at the generator's cap of %s (load.max_concurrent_sessions)",
			fmtInt(r.SessionsDroppedAtCap), fmtInt(int64(r.MaxConcurrentSessions))))
	}
	if r.SessionsDroppedUsersBusy > 0 {
		parts = append(parts, fmt.Sprintf("%s with every one of the %s users busy", fmtInt(r.SessionsDroppedUsersBusy), fmtInt(int64(r.Users))))
	}
	if other := r.SessionsDropped - r.SessionsDroppedAtCap - r.SessionsDroppedUsersBusy; other > 0 {
		parts = append(parts, fmt.Sprintf("%s of unrecorded cause", fmtInt(other)))
	}
	return parts
}

// DropAttribution says whose doing the drops were ("" when none).
func (r *Run) DropAttribution() string {
	lasted := "sessions lasted as planned"
	if r.MeanSessionDuration <= 0 || r.PlannedSessionDuration <= 0 {
		lasted = "lengths not measured"
	}
	switch r.DropsBy() {
	case DropsServer:
		return r.serversSlowdown()
	case DropsGeneratorCap:
		return "mailbench's cap, not the server (" + lasted + "; raise load.max_concurrent_sessions)"
	case DropsPopulation:
		return "mailbench's population, not the server (" + lasted + "; more users)"
	}
	return ""
}

// serversSlowdown attributes drops to a server that slowed the sessions
// down (SessionsSlowed), with their measured and planned lengths.
func (r *Run) serversSlowdown() string {
	return "the server's: sessions lasted " + fmtSeconds(time.Duration(r.MeanSessionDuration)) + " on average against " +
		fmtSeconds(time.Duration(r.PlannedSessionDuration)) + " planned"
}

// DropLine explains the dropped sessions by cause in one line ("" when
// none were).
func (r *Run) DropLine() string {
	if r.SessionsDropped <= 0 {
		return ""
	}
	return fmtInt(r.SessionsDropped) + " dropped: " + strings.Join(r.DropCounts(), "; ") + "; " + r.DropAttribution()
}

// ConcurrencyLine compares the concurrency the plan expected with the one
// measured ("" when neither is known).
func (r *Run) ConcurrencyLine() string {
	if r.PlannedConcurrency > 0 || r.MeanSessionDuration > 0 {
		return fmt.Sprintf("planned %s (%s sessions), observed mean %s (%s sessions), max %s",
			FormatWhole(r.PlannedConcurrency), fmtSeconds(time.Duration(r.PlannedSessionDuration)), FormatWhole(r.ObservedConcurrency()),
			fmtSeconds(time.Duration(r.MeanSessionDuration)), fmtInt(int64(r.MaxConcurrentObserved)))
	}
	return ""
}

// AchievedBand is the central 95% band of the achieved rate that the target
// rate's Poisson schedule gives over the window (sessions/hour); 0, 0 when
// unknown.
func (r *Run) AchievedBand() (lo, hi float64) {
	mean, l, h := r.ExpectedSessions()
	if !(mean > 0) || r.Measurement <= 0 {
		return 0, 0
	}
	return float64(l) / r.Measurement.Hours(), float64(h) / r.Measurement.Hours()
}

func FormatWhole(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return fmtInt(int64(math.Round(f)))
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// UsersCell is the users of the run for a comparison column: "2,500" when
// it has a users figure, "50 mailboxes (288/user-hour)" when it does not,
// "-" when the users are not recorded.
func (r *Run) UsersCell() string {
	if u, ok := r.UsersFigure(); ok {
		return fmtInt(int64(u))
	}
	if r.Users > 0 {
		return fmtInt(int64(r.Users)) + " mailboxes (" + trimFloat(math.Round(r.SessionsPerUser()*10)/10) + "/user-hour)"
	}
	return "-"
}

// DroppedCell is "late / dropped (at cap, users busy)" for a comparison
// column.
func (r *Run) DroppedCell() string {
	s := fmtInt(r.SessionsLate) + " / " + fmtInt(r.SessionsDropped)
	if r.SessionsDropped > 0 {
		s += " (cap " + fmtInt(r.SessionsDroppedAtCap) + ", users busy " + fmtInt(r.SessionsDroppedUsersBusy) + ")"
	}
	return s
}

// StreamDropLine explains a mail stream's dropped arrivals by cause and
// says whose doing they were, in one line ("" when none were dropped):
// the stream's cap fills when deliveries last long, which is the server's
// doing when it slowed the sessions down too (SessionsSlowed), and
// mailbench's cap otherwise.
func (r *Run) StreamDropLine(st MailStream) string {
	if st.Dropped <= 0 {
		return ""
	}
	var parts []string
	if st.DroppedAtCap > 0 {
		parts = append(parts, fmt.Sprintf("%s at the generator's cap of %s concurrent deliveries (a quarter of load.max_concurrent_sessions)",
			fmtInt(st.DroppedAtCap), fmtInt(int64(st.MaxConcurrent))))
	}
	if other := st.Dropped - st.DroppedAtCap; other > 0 {
		parts = append(parts, fmt.Sprintf("%s of another cause", fmtInt(other)))
	}
	whose := "mailbench's cap, not the server (raise load.max_concurrent_sessions)"
	if r.SessionsSlowed() {
		whose = r.serversSlowdown()
	} else if st.DroppedAtCap == 0 {
		whose = "mailbench's, not the server"
	}
	return fmtInt(st.Dropped) + " " + st.What + " dropped: " + strings.Join(parts, "; ") + "; " + whose
}
