// Package report is the result of a whole mailbench run, as a model: the
// Run and its figures, WriteJSON/ReadJSON for files (schema in
// docs/report-schema.md), Merge to combine the shards of one run that
// several load-generator machines measured over the same window, the
// evaluation against the compliance rules (Evaluate) and against another
// run (Regressions), and the one-line statements derived from a Run that
// every output shares (Headline, VerdictLine, LoadLine…). Drawing a Run
// (text, HTML, side by side) is report/render's.
//
// Nothing in this package performs I/O except on the io.Writer or io.Reader
// it is given. A Run holds no password and nothing here prints one.
package report

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/metrics"
)

// Target is the system under test, as addresses (host:port).
type Target struct {
	IMAP     string `json:"imap"`
	SMTP     string `json:"smtp"`
	Sink     string `json:"sink"`     // where the SUT relays remote mail; "" when no sink ran
	Embedded bool   `json:"embedded"` // mailbench's in-process demo target
}

// SinkSummary is what the SMTP sink received during the run.
type SinkSummary struct {
	Messages      int64    `json:"messages"`
	Recipients    int64    `json:"recipients"`
	Bytes         int64    `json:"bytes"`
	RelayDelayP50 Duration `json:"relay_delay_p50_us"`
	RelayDelayP95 Duration `json:"relay_delay_p95_us"`
	RelayDelayMax Duration `json:"relay_delay_max_us"`
	// RelayDelay optionally holds every relay delay (µs, compliance's
	// geometry). When every merged run has one, Merge combines them exactly
	// and recomputes the three figures above; otherwise it keeps the
	// largest of each figure and warns.
	RelayDelay Histogram `json:"relay_delay_histogram,omitzero"`
	// Foreign counts messages the sink accepted that were not this run's
	// (an earlier run's mail that the server retried, stray mail), by run
	// id in ForeignRuns ("" : no mailbench id). They are in none of the
	// figures above.
	Foreign     int64            `json:"foreign,omitempty"`
	ForeignRuns map[string]int64 `json:"foreign_runs,omitempty"`
}

// ForeignRunsText renders foreign messages by run id, largest first: "r1a2b3c4d
// 5, without a mailbench id 3".
func ForeignRunsText(runs map[string]int64) string {
	keys := slices.Collect(maps.Keys(runs))
	slices.SortFunc(keys, func(a, b string) int {
		if runs[a] != runs[b] {
			return int(runs[b] - runs[a])
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		name := k
		if k == "" {
			name = "without a mailbench id"
		} else if k != "other" {
			name = "run " + k
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, runs[k]))
	}
	return strings.Join(parts, ", ")
}

// Run is the result of one run (or of several merged shards).
// The session counts cover the measurement window only.
//
// A Run is the JSON report: WriteJSON encodes it as its field tags say
// (docs/report-schema.md), and ReadJSON decodes it back. Durations are
// whole microseconds (Duration, fields ending in _us), times RFC 3339.
type Run struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	Config  string `json:"config"` // the workload file; "" for built-in defaults
	Name    string `json:"name"`
	Seed    int64  `json:"seed"`

	Started     time.Time `json:"started"`
	Ended       time.Time `json:"ended"`
	Warmup      Duration  `json:"warmup_us"`
	Measurement Duration  `json:"measurement_us"`
	Rampdown    Duration  `json:"rampdown_us"`
	// Partial: stopped early (Ctrl-C, fatal error); PartialReason says
	// why, e.g. "interrupted".
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason"`
	Target        Target `json:"target"`
	// CouldNotRun, when set, is why the run was abandoned early (the
	// target refused or timed out every connection): no result at all.
	CouldNotRun string `json:"could_not_run,omitempty"`
	// The session counts, with their fields promoted (r.SessionsStarted).
	SessionCounts `json:"sessions"`
	// Inbound is the background stream of remote→local mail, counted like
	// the sessions.
	Inbound InboundSummary `json:"inbound"`
	// Sends is the population's stream of sent mail ([[population]]
	// groups' sent_per_hour), counted like the sessions; nil without a
	// population.
	Sends *InboundSummary `json:"sends,omitempty"`
	// Generator is how the load generator itself fared (nil: not
	// measured). When it was the bottleneck (GeneratorBound) the run is no
	// result for the server.
	Generator *GeneratorHealth `json:"generator,omitempty"`
	// Server is what was observed of the server under test beside the run
	// ([server] of the config); nil when nothing was watched. Observations
	// made alongside the load, never a proven cause.
	Server *metrics.ServerReport `json:"server,omitempty"`
	// ServerCriteria are mailbench's own rows of the table ([server]
	// criteria): a server figure's mean at most Max; Evaluate judges them.
	ServerCriteria []ServerCriterion `json:"server_criteria,omitempty"`
	Sink           SinkSummary       `json:"sink"`
	Warnings       []string          `json:"warnings"`
	// Delivery is the reconciliation of what was sent with what arrived
	// (nil when not measured); lost, duplicated or corrupted mail fails
	// the run whatever the table says.
	Delivery *delivery.Reconciliation `json:"delivery,omitempty"`
	// DeliveryChecks is what the delivery checker cost the server (its
	// commands are not in the function timings).
	DeliveryChecks *CheckerSummary `json:"delivery_checks,omitempty"`
	// Clients is the connected population of [clients]; nil without one.
	Clients *ClientsSummary `json:"clients,omitempty"`
	// Population is [population] by group; nil without one.
	Population *PopulationSummary `json:"population,omitempty"`
	// ServerClock is the server's clock against mailbench's (nil when not
	// checked), which INTERNALDATE-based delivery times depend on.
	ServerClock *delivery.ClockCheck `json:"server_clock,omitempty"`
	// DeliveryTiming states how local deliveries were timed and to what
	// resolution ("" when not measured).
	DeliveryTiming string `json:"delivery_timing,omitempty"`
	// Connect breaks IMAP and SMTP Connect down into TCP, TLS, greeting
	// and authentication, and counts resumed TLS handshakes (measurement
	// window; nil when not measured).
	Connect *metrics.ConnectSnapshot `json:"connect,omitempty"`
	// Table is the compliance table, as Evaluate made it (and as read:
	// Merge re-evaluates it).
	Table compliance.Table `json:"compliance"`
	// Functions are the exact counts and histograms by function.
	Functions Functions `json:"functions"`
	// Timeline is the measurement window over time, as the recorder made
	// it (metrics.Recorder.Timeline); nil when not measured.
	Timeline Timeline `json:"timeline,omitempty"`
	// Shard identifies one shard of a sharded run (nil: a whole run, or
	// the merge of all shards); RemotePending holds its remote deliveries
	// to reconcile against an external sink (see shard.go).
	Shard         *ShardInfo        `json:"shard,omitempty"`
	RemotePending *delivery.Pending `json:"remote_pending,omitempty"`
}

// SessionCounts are a run's sessions in the measurement window: the rate,
// the population and what became of the sessions due. Run embeds it, so
// it has no JSON methods of its own (they would become Run's).
type SessionCounts struct {
	TargetSessionsPerHour   float64 `json:"target_per_hour"`
	AchievedSessionsPerHour float64 `json:"achieved_per_hour"`
	SessionsPerUserHour     float64 `json:"per_user_hour"`    // the conversion factor to users (default 4.8)
	EquivalentUsers         float64 `json:"equivalent_users"` // the users figure, when the run has one (UsersFigure)
	// SessionsScheduled were due in the window (started + dropped);
	// SessionsLoggedIn connected and logged in; SessionsCompleted ran every
	// step; SessionsFailed ended early by an error (not by mailbench's cut).
	SessionsScheduled int64 `json:"scheduled"`
	// Expected, ExpectedLow and ExpectedHigh are derived
	// (Run.ExpectedSessions), as are the other fields marked so below:
	// WriteJSON computes them for the file's readers, and Run's methods
	// compute them again from the counts.
	Expected          float64 `json:"expected"`
	ExpectedLow       int64   `json:"expected_low"`
	ExpectedHigh      int64   `json:"expected_high"`
	SessionsStarted   int64   `json:"started"`
	SessionsLoggedIn  int64   `json:"logged_in"`
	SessionsCompleted int64   `json:"completed"`
	SessionsFailed    int64   `json:"failed"`
	SessionsLate      int64   `json:"late"`    // started, but later than the tolerance
	SessionsDropped   int64   `json:"dropped"` // never started: generator at its cap or every user busy
	// MaxDroppedPercent: the run fails when SessionsDropped reaches this
	// share of the sessions due (started + dropped); 0 disables the check.
	MaxDroppedPercent     float64          `json:"max_dropped_percent"`
	SessionsByType        map[string]int64 `json:"by_type"`
	MaxConcurrentObserved int              `json:"max_concurrent_observed"`
	// Users is how many users (mailboxes) the run drew its sessions from;
	// 0: not recorded.
	Users        int     `json:"users"`
	UsersFigured bool    `json:"users_figure"`      // derived: Run.UsersFigure
	PerUser      float64 `json:"sessions_per_user"` // derived: Run.SessionsPerUser
	// SessionsDroppedAtCap and SessionsDroppedUsersBusy split
	// SessionsDropped by cause: the generator at load.max_concurrent_sessions
	// (MaxConcurrentSessions), or every one of the Users already in a
	// session. Reports before the split have both 0.
	SessionsDroppedAtCap     int64     `json:"dropped_at_cap"`
	SessionsDroppedUsersBusy int64     `json:"dropped_users_busy"`
	DroppedBy                DropCause `json:"drops_by"`                // derived: Run.DropsBy
	MaxConcurrentSessions    int       `json:"max_concurrent_sessions"` // load.max_concurrent_sessions: mailbench's own cap
	// PlannedSessionDuration is the plan's mean session length
	// (workload.Plan.MeanSessionDuration: think times plus a nominal time
	// per operation) and PlannedConcurrency the concurrency it implies at
	// the target rate (Little's law). MeanSessionDuration is the measured
	// mean length of the sessions started in the window. A server that
	// slows sessions down shows as MeanSessionDuration above the plan.
	PlannedSessionDuration Duration `json:"planned_session_us"`
	PlannedConcurrency     float64  `json:"planned_concurrency"`
	MeanSessionDuration    Duration `json:"mean_session_us"`
	MeanConcurrency        float64  `json:"mean_concurrency"`            // derived: Run.ObservedConcurrency
	AchievedBandLow        float64  `json:"achieved_band_low_per_hour"`  // derived: Run.AchievedBand
	AchievedBandHigh       float64  `json:"achieved_band_high_per_hour"` // derived: Run.AchievedBand
}

// InboundSummary counts a mail stream's arrivals due in the measurement
// window (the inbound mail, the population's sent mail), as the sessions
// are counted.
type InboundSummary struct {
	TargetPerHour float64 `json:"target_per_hour"`
	Scheduled     int64   `json:"scheduled"`
	Started       int64   `json:"started"`
	Late          int64   `json:"late"`
	Dropped       int64   `json:"dropped"`
	// DroppedAtCap are the drops at the stream's own concurrency cap,
	// MaxConcurrent (a quarter of load.max_concurrent_sessions): mailbench's
	// bound, reached when deliveries last longer than the rate allows.
	DroppedAtCap  int64 `json:"dropped_at_cap,omitempty"`
	MaxConcurrent int   `json:"max_concurrent,omitempty"`
}

// DroppedPercent is the share of the stream's arrivals due in the window
// that could not start; ok is false when none were due.
func (s InboundSummary) DroppedPercent() (pct float64, ok bool) {
	return droppedShare(s.Started, s.Dropped)
}

// droppedShare is dropped as a percentage of the arrivals due (started +
// dropped); ok is false when none were due.
func droppedShare(started, dropped int64) (pct float64, ok bool) {
	due := started + dropped
	if due == 0 {
		return 0, false
	}
	return 100 * float64(dropped) / float64(due), true
}

// GeneratorMaxLatePercent is the share of the sessions started in the
// window that may start late (later than load.late_tolerance) before the
// run is GENERATOR-BOUND.
const GeneratorMaxLatePercent = 1.0

// GeneratorBound lists why the load generator, not the server, was the
// bottleneck of the run; none: it kept up. It is mailbench's one
// definition of GENERATOR-BOUND, used by run, sweep, compare-tls, size and
// certify alike (docs/run-rules.md, "GENERATOR-BOUND"): the lateness p99 of
// sessions or inbound mail above the late tolerance, the generator's CPU
// above GeneratorCPULimit of its cores, operations timed longer than
// op_timeout allows (GeneratorHealth.BoundReasons), or more than
// GeneratorMaxLatePercent of the sessions started late, at least
// GeneratorMinLate of them.
func (r *Run) GeneratorBound() []string {
	why := r.Generator.BoundReasons()
	if r.SessionsStarted > 0 {
		if pct := 100 * float64(r.SessionsLate) / float64(r.SessionsStarted); pct > GeneratorMaxLatePercent && r.SessionsLate >= GeneratorMinLate {
			why = append(why, fmt.Sprintf("%s of %s sessions started late (%s%% > %s%%): the generator could not keep to the schedule",
				fmtInt(r.SessionsLate), fmtInt(r.SessionsStarted), strconv.FormatFloat(pct, 'f', 2, 64), trimFloat(GeneratorMaxLatePercent)))
		}
	}
	return why
}

// NotAResult says why r is no result for the server ("" when it is one):
// abandoned (could not run), stopped early (partial), or generator-bound.
func (r *Run) NotAResult() string {
	switch {
	case r.CouldNotRun != "":
		return "could not run: " + r.CouldNotRun
	case r.Partial:
		return "partial run: " + orValue(r.PartialReason, "stopped early")
	}
	if why := r.GeneratorBound(); len(why) > 0 {
		return "GENERATOR-BOUND: " + joinReasons(why)
	}
	return ""
}

// ExpectedSessions is the Poisson expectation of sessions due in the
// window at the target rate, and its central 95% band.
func (r *Run) ExpectedSessions() (mean float64, lo, hi int64) {
	mean = r.TargetSessionsPerHour * r.Measurement.Hours()
	lo, hi = PoissonBand(mean)
	return mean, lo, hi
}

// CheckerSummary is the delivery checker's own work.
type CheckerSummary struct {
	Checks   int64 `json:"checks"`
	Commands int64 `json:"commands"`
	Errors   int64 `json:"errors"`
	// ErrorSamples are the checker's first distinct errors (login and
	// error, never a password).
	ErrorSamples []string `json:"error_samples,omitempty"`
}

// ClientsSummary is what the connected population of [clients] did.
type ClientsSummary struct {
	Target int `json:"target"` // clients.connected (this shard's)
	// Held were connected at the end of the measurement window.
	Held       int64            `json:"held"`
	Connects   int64            `json:"connects"`
	Reconnects int64            `json:"reconnects"`
	Attempts   int64            `json:"attempts"`
	Drops      map[string]int64 `json:"drops,omitempty"` // connections lost or refused, by error class
	Idles      int64            `json:"idles"`           // IDLE commands started, renewals included
	Announced  int64            `json:"announced"`       // EXISTS announcements received
}

// add is the session counts of two shards together: counts, users, caps
// and planned concurrency summed, sessions by type per type, the largest
// dropped-share limit and planned session length. The rates, the sessions
// per user-hour and the mean session length are the merge's (they need
// every shard at once), and the derived figures are left out.
func (c SessionCounts) add(o SessionCounts) SessionCounts {
	return SessionCounts{
		SessionsScheduled:        c.SessionsScheduled + o.SessionsScheduled,
		SessionsStarted:          c.SessionsStarted + o.SessionsStarted,
		SessionsLoggedIn:         c.SessionsLoggedIn + o.SessionsLoggedIn,
		SessionsCompleted:        c.SessionsCompleted + o.SessionsCompleted,
		SessionsFailed:           c.SessionsFailed + o.SessionsFailed,
		SessionsLate:             c.SessionsLate + o.SessionsLate,
		SessionsDropped:          c.SessionsDropped + o.SessionsDropped,
		MaxDroppedPercent:        max(c.MaxDroppedPercent, o.MaxDroppedPercent),
		SessionsByType:           addCounts(maps.Clone(c.SessionsByType), o.SessionsByType),
		MaxConcurrentObserved:    c.MaxConcurrentObserved + o.MaxConcurrentObserved,
		Users:                    c.Users + o.Users,
		SessionsDroppedAtCap:     c.SessionsDroppedAtCap + o.SessionsDroppedAtCap,
		SessionsDroppedUsersBusy: c.SessionsDroppedUsersBusy + o.SessionsDroppedUsersBusy,
		MaxConcurrentSessions:    c.MaxConcurrentSessions + o.MaxConcurrentSessions,
		PlannedSessionDuration:   max(c.PlannedSessionDuration, o.PlannedSessionDuration),
		PlannedConcurrency:       c.PlannedConcurrency + o.PlannedConcurrency,
	}
}

// add is the population of two shards together (nil: none).
func (c *ClientsSummary) add(o *ClientsSummary) *ClientsSummary {
	if o == nil {
		return c
	}
	if c == nil {
		c = &ClientsSummary{}
	}
	s := *c
	s.Target += o.Target
	s.Held += o.Held
	s.Connects += o.Connects
	s.Reconnects += o.Reconnects
	s.Attempts += o.Attempts
	s.Idles += o.Idles
	s.Announced += o.Announced
	s.Drops = addCounts(maps.Clone(c.Drops), o.Drops)
	return &s
}

// add is what two checkers cost together (nil: none).
func (c *CheckerSummary) add(o *CheckerSummary) *CheckerSummary {
	if o == nil {
		return c
	}
	if c == nil {
		c = &CheckerSummary{}
	}
	return &CheckerSummary{Checks: c.Checks + o.Checks, Commands: c.Commands + o.Commands, Errors: c.Errors + o.Errors,
		ErrorSamples: append(slices.Clone(c.ErrorSamples), o.ErrorSamples...)}
}

// add is the streams of two shards together (their caps summed, as the
// sessions' are).
func (s InboundSummary) add(o InboundSummary) InboundSummary {
	return InboundSummary{TargetPerHour: s.TargetPerHour + o.TargetPerHour, Scheduled: s.Scheduled + o.Scheduled,
		Started: s.Started + o.Started, Late: s.Late + o.Late, Dropped: s.Dropped + o.Dropped,
		DroppedAtCap: s.DroppedAtCap + o.DroppedAtCap, MaxConcurrent: s.MaxConcurrent + o.MaxConcurrent}
}

// addSends adds two shards' sent-mail streams, either of which may be nil.
func addSends(a, b *InboundSummary) *InboundSummary {
	switch {
	case b == nil:
		return a
	case a == nil:
		c := *b
		return &c
	}
	c := a.add(*b)
	return &c
}

// addCounts adds the counts of b to a (made when nil and b has any).
func addCounts(a, b map[string]int64) map[string]int64 {
	for k, v := range b {
		if a == nil {
			a = make(map[string]int64, len(b))
		}
		a[k] += v
	}
	return a
}

// addCounts adds the message counts and foreign mail of o to s; the relay
// delays merge apart (mergeRelayDelay).
func (s *SinkSummary) addCounts(o SinkSummary) {
	s.Messages += o.Messages
	s.Recipients += o.Recipients
	s.Bytes += o.Bytes
	s.Foreign += o.Foreign
	s.ForeignRuns = addCounts(s.ForeignRuns, o.ForeignRuns)
}

// Failing says why the connected population fails the run: it did not
// hold its target at the end of the measurement window. "" when it did.
func (c *ClientsSummary) Failing() string {
	if c == nil || c.Held >= int64(c.Target) {
		return ""
	}
	return fmt.Sprintf("held %d of %d connected clients at the end of the measurement window", c.Held, c.Target)
}

// ClientsRow is the name of the connected-population entry in
// Table.Failing.
const ClientsRow = "Connected clients"

// DroppedRow is the name of the offered-load check in Table.Failing.
const DroppedRow = "Dropped sessions"

// DroppedPercent is the share of the sessions due in the measurement window
// that could not start; ok is false when none were due.
func (r *Run) DroppedPercent() (pct float64, ok bool) {
	return droppedShare(r.SessionsStarted, r.SessionsDropped)
}

// DroppedInboundRow and DroppedSendsRow name the mail streams' offered-load
// checks in Table.Failing.
const (
	DroppedInboundRow = "Dropped inbound mail"
	DroppedSendsRow   = "Dropped sent mail"
)

// MailStream is one of a run's mail streams, named for the report.
type MailStream struct {
	InboundSummary
	Row  string // its offered-load check's row (DroppedInboundRow, DroppedSendsRow)
	What string // what its arrivals are: "inbound messages", "sent messages"
}

// MailStreams returns the run's mail streams that had arrivals due: the
// inbound mail, and the population's sent mail. Their drops count against
// MaxDroppedPercent as the sessions' do: mail that was never sent is load
// the server was not offered.
func (r *Run) MailStreams() []MailStream {
	var out []MailStream
	if r.Inbound.Scheduled > 0 || r.Inbound.Dropped > 0 {
		out = append(out, MailStream{r.Inbound, DroppedInboundRow, "inbound messages"})
	}
	if r.Sends != nil && (r.Sends.Scheduled > 0 || r.Sends.Dropped > 0) {
		out = append(out, MailStream{*r.Sends, DroppedSendsRow, "sent messages"})
	}
	return out
}

// StreamFailing returns the share of a mail stream's arrivals that were
// dropped, and whether that fails the run (MaxDroppedPercent reached).
func (r *Run) StreamFailing(st MailStream) (pct float64, failing bool) {
	pct, ok := st.DroppedPercent()
	return pct, ok && r.MaxDroppedPercent > 0 && pct >= r.MaxDroppedPercent
}

// StreamFailingReasons says, for each mail stream that fails the run, why:
// "Dropped inbound mail: 10.00% of the inbound messages due could not
// start (must stay below 1%): the load offered was below the target".
func (r *Run) StreamFailingReasons() []string {
	var out []string
	for _, st := range r.MailStreams() {
		if pct, failing := r.StreamFailing(st); failing {
			out = append(out, fmt.Sprintf("%s: %.2f%% of the %s due could not start (must stay below %s%%): the load offered was below the target",
				st.Row, pct, st.What, compliance.FormatPercentLimit(r.MaxDroppedPercent)))
		}
	}
	return out
}

// DeliveryRow is the name of the delivery-accounting entry in Table.Failing.
const DeliveryRow = "Delivery accounting"

// Evaluate sets r.Table to the evaluation of r.Functions against rules, and
// fails it when the delivery reconciliation found lost, duplicated or
// corrupted mail.
func (r *Run) Evaluate(rules compliance.Rules) {
	r.Table = compliance.Evaluate(r.Functions, rules)
	if pct, ok := r.DroppedPercent(); ok && r.MaxDroppedPercent > 0 && pct >= r.MaxDroppedPercent {
		r.Table.Compliant = false
		r.Table.Failing = append(r.Table.Failing, DroppedRow)
	}
	for _, st := range r.MailStreams() {
		if _, failing := r.StreamFailing(st); failing {
			r.Table.Compliant = false
			r.Table.Failing = append(r.Table.Failing, st.Row)
		}
	}
	if r.Delivery != nil && (len(r.Delivery.Failing()) > 0 || r.Delivery.PendingRemote > 0 && r.Shard == nil) {
		r.Table.Compliant = false
		r.Table.Failing = append(r.Table.Failing, DeliveryRow)
	}
	if r.Clients.Failing() != "" {
		r.Table.Compliant = false
		r.Table.Failing = append(r.Table.Failing, ClientsRow)
	}
	for i := range r.ServerCriteria {
		c := &r.ServerCriteria[i]
		c.Mean, c.Pass = nil, false
		if f, ok := r.Server.Figure(c.Figure); ok {
			m := f.Mean
			c.Mean, c.Pass = &m, m <= c.Max
		}
		if !c.Pass {
			r.Table.Compliant = false
			r.Table.Failing = append(r.Table.Failing, c.Row())
		}
	}
}

// ServerCriterion is a row of mailbench's own: a figure of the server
// ([server] criteria) whose mean over the measurement window must be at
// most Max. A figure never measured fails the row, as a function without
// operations does.
type ServerCriterion struct {
	Figure string   `json:"figure"`
	Max    float64  `json:"max"`
	Mean   *float64 `json:"mean"` // nil: not measured
	Pass   bool     `json:"pass"`
}

// Row is the criterion's name in the table and in Table.Failing.
func (c ServerCriterion) Row() string { return "Server " + c.Figure }

// Reason says why the row passes or fails.
func (c ServerCriterion) Reason() string {
	if c.Mean == nil {
		return "never measured (is its source in [server], and did it answer?)"
	}
	rel := "is at most"
	if !c.Pass {
		rel = "is above"
	}
	return fmt.Sprintf("mean %s %s %s", FormatServerValue("", *c.Mean), rel, FormatServerValue("", c.Max))
}

// Merge combines the shards of one run, measured by several load generators
// over the same window, into a new Run; it doesn't modify its arguments.
// Function counts and histograms merge exactly and the table is re-evaluated
// against the shards' common rules (recovered from their tables; differing
// rules or limits are an error). Session counts, sink counts and rates are
// summed; SessionsByType per type; MaxConcurrentObserved is the sum of the
// shards' maxima (an upper bound). Started is the earliest start, Ended the
// latest end. Fields that should agree (names, versions, addresses, seed,
// phase lengths, sessions per user-hour) are kept when they do; otherwise the
// distinct values are joined (strings) or the largest is kept, with a
// warning. The result does not depend on the order of runs.
//
// Merge refuses runs that are not shards of one run (see MergeWith): the
// same run twice, runs of different configs, and runs over different
// measurement windows. A merge that includes a partial run is partial.
func Merge(runs ...*Run) (*Run, error) { return MergeWith(MergeOptions{}, runs...) }

// MergeOptions are the options of MergeWith.
type MergeOptions struct {
	// Labels name the runs in errors (e.g. their file names); run i is
	// "run i+1" when there is no label.
	Labels []string
	// Force merges runs of different configs or measurement windows,
	// with warnings. The same run twice is refused even so.
	Force bool
}

// ErrNotShards is what MergeWith's refusals of runs of different configs
// or windows wrap: Force merges those anyway.
var ErrNotShards = errors.New("not shards of one run")

// WindowTolerance is the share of the measurement length by which the
// shards' measurement windows may start apart (generators started by hand
// are not started at the same instant).
const WindowTolerance = 0.10

// MergeWith is Merge with options. Before merging it refuses
//   - the same run twice: two runs with the same start time (to the
//     microsecond, as the JSON report keeps it), seed, config file and
//     name, which would count the run's operations twice (always refused);
//   - runs of different configs: their config files or names differ;
//   - runs over different windows: their warm-up, measurement or ramp-down
//     lengths differ, or their measurement windows start further apart than
//     WindowTolerance of the measurement length.
//
// The last two wrap ErrNotShards and are merged with warnings when
// opts.Force is set.
func MergeWith(opts MergeOptions, runs ...*Run) (*Run, error) {
	if len(runs) == 0 {
		return nil, errors.New("merge: no runs")
	}
	for i, r := range runs {
		if r == nil {
			return nil, fmt.Errorf("merge: run %d is nil", i)
		}
	}
	if err := checkShardSet(runs); err != nil {
		return nil, err
	}
	if err := checkShards(opts, runs); err != nil {
		return nil, err
	}
	rules := runs[0].Table.Rules()
	for _, r := range runs[1:] {
		if !sameRules(rules, r.Table.Rules()) {
			return nil, errors.New("merge: runs were evaluated against different compliance rules")
		}
	}
	stats := metrics.NewStats(rules.Limits())
	for i, r := range runs {
		if err := stats.MergeSnapshot(r.Functions); err != nil {
			return nil, fmt.Errorf("merge: run %d (%s): %w", i, r.Name, err)
		}
	}

	var warn []string
	m := &Run{
		Tool:          joinDistinct(runs, func(r *Run) string { return r.Tool }),
		Version:       joinDistinct(runs, func(r *Run) string { return r.Version }),
		Config:        joinDistinct(runs, func(r *Run) string { return r.Config }),
		Name:          joinDistinct(runs, func(r *Run) string { return r.Name }),
		PartialReason: joinDistinct(runs, func(r *Run) string { return r.PartialReason }),
		Target: Target{
			IMAP: joinDistinct(runs, func(r *Run) string { return r.Target.IMAP }),
			SMTP: joinDistinct(runs, func(r *Run) string { return r.Target.SMTP }),
			Sink: joinDistinct(runs, func(r *Run) string { return r.Target.Sink }),
		},
		Functions: stats.Snapshot(),
	}
	for _, f := range []struct {
		name string
		get  func(*Run) string
	}{
		{"names", func(r *Run) string { return r.Name }},
		{"configs", func(r *Run) string { return r.Config }},
		{"targets", func(r *Run) string { return r.Target.IMAP + " " + r.Target.SMTP }},
	} {
		if n := len(distinct(runs, f.get)); n > 1 {
			warn = append(warn, fmt.Sprintf("merged runs have %d different %s", n, f.name))
		}
	}

	seeds := make(map[int64]bool)
	for _, r := range runs {
		seeds[r.Seed] = true
	}
	if len(seeds) == 1 {
		m.Seed = runs[0].Seed
	} else {
		warn = append(warn, fmt.Sprintf("merged runs have %d different seeds; seed shown as 0", len(seeds)))
	}

	var sessionTime float64 // seconds, over every shard's started sessions
	for i, r := range runs {
		if i == 0 || r.Started.Before(m.Started) {
			m.Started = r.Started
		}
		if i == 0 || r.Ended.After(m.Ended) {
			m.Ended = r.Ended
		}
		m.Partial = m.Partial || r.Partial
		m.Target.Embedded = m.Target.Embedded || r.Target.Embedded
		m.SessionCounts = m.SessionCounts.add(r.SessionCounts)
		sessionTime += r.MeanSessionDuration.Seconds() * float64(r.SessionsStarted)
		m.Inbound = m.Inbound.add(r.Inbound)
		m.Sends = addSends(m.Sends, r.Sends)
		if r.CouldNotRun != "" && !strings.Contains(m.CouldNotRun, r.CouldNotRun) {
			m.CouldNotRun = strings.TrimPrefix(m.CouldNotRun+"; "+r.CouldNotRun, "; ")
		}
		m.Sink.addCounts(r.Sink)
		m.Warnings = append(m.Warnings, r.Warnings...)
		if r.Delivery != nil {
			if m.Delivery == nil {
				m.Delivery = &delivery.Reconciliation{}
			}
			*m.Delivery = m.Delivery.Add(*r.Delivery)
		}
		m.DeliveryChecks = m.DeliveryChecks.add(r.DeliveryChecks)
		m.Clients = m.Clients.add(r.Clients)
		m.Population = m.Population.add(r.Population)
	}
	if m.SessionsStarted > 0 {
		m.MeanSessionDuration = Duration(time.Duration(sessionTime / float64(m.SessionsStarted) * float64(time.Second)).Truncate(time.Microsecond))
	}
	if m.Target.Embedded && len(runs) > 1 {
		warn = append(warn, "merged runs include an embedded target: each shard loaded its own server")
	}

	for _, p := range []struct {
		name string
		dst  *Duration
		get  func(*Run) Duration
	}{
		{"warm-up", &m.Warmup, func(r *Run) Duration { return r.Warmup }},
		{"measurement", &m.Measurement, func(r *Run) Duration { return r.Measurement }},
		{"ramp-down", &m.Rampdown, func(r *Run) Duration { return r.Rampdown }},
	} {
		var differ bool
		for _, r := range runs {
			d := p.get(r)
			differ = differ || d != p.get(runs[0])
			*p.dst = max(*p.dst, d)
		}
		if differ {
			warn = append(warn, fmt.Sprintf("merged runs have different %s lengths; the longest is shown", p.name))
		}
	}

	m.TargetSessionsPerHour = sumSorted(runs, func(r *Run) float64 { return r.TargetSessionsPerHour })
	m.AchievedSessionsPerHour = sumSorted(runs, func(r *Run) float64 { return r.AchievedSessionsPerHour })
	spuh := make(map[float64]bool)
	for _, r := range runs {
		spuh[r.SessionsPerUserHour] = true
	}
	if len(spuh) == 1 && runs[0].SessionsPerUserHour > 0 {
		m.SessionsPerUserHour = runs[0].SessionsPerUserHour
	} else if len(spuh) > 1 {
		warn = append(warn, "merged runs have different sessions per user-hour: no users figure")
	}
	if u, ok := m.UsersFigure(); ok {
		m.EquivalentUsers = float64(u)
	}

	var snaps []*metrics.ConnectSnapshot
	for _, r := range runs {
		if r.Connect != nil {
			snaps = append(snaps, r.Connect)
		}
	}
	if len(snaps) > 0 {
		if c, err := metrics.MergeConnect(snaps...); err == nil {
			m.Connect = c
		} else {
			warn = append(warn, "connect time breakdown not merged: "+err.Error())
		}
	}

	tl, tw := mergeTimelines(runs)
	m.Timeline = tl
	warn = append(warn, tw...)

	m.Generator = mergeGenerator(runs)
	// Each generator may watch the server; their observations are of the
	// same server and window: the first shard's stands for them (the
	// sums of per-process figures across machines would mean nothing).
	for _, r := range runs {
		if r.Server != nil {
			m.Server = r.Server
			break
		}
	}
	for _, r := range runs {
		if len(r.ServerCriteria) > 0 {
			m.ServerCriteria = append([]ServerCriterion(nil), r.ServerCriteria...)
			break
		}
	}

	if w := mergeRelayDelay(&m.Sink, runs); w != "" {
		warn = append(warn, w)
	}

	if len(runs) > 1 {
		warn = append(warn, fmt.Sprintf("merged from %d runs", len(runs)))
	}
	m.Warnings = append(m.Warnings, warn...)
	slices.Sort(m.Warnings)
	m.Warnings = slices.Compact(m.Warnings)
	m.Evaluate(rules)
	return m, nil
}

// shardIndex is r's shard index, -1 for a whole run: shards of one run
// share its start, seed and config, and are still not the same run.
func shardIndex(r *Run) int {
	if r.Shard == nil {
		return -1
	}
	return r.Shard.Index
}

// checkShards returns why runs are not the shards of one run, or nil.
func checkShards(opts MergeOptions, runs []*Run) error {
	label := func(i int) string {
		if i < len(opts.Labels) && opts.Labels[i] != "" {
			return opts.Labels[i]
		}
		return fmt.Sprintf("run %d", i+1)
	}
	for i, a := range runs {
		for j := i + 1; j < len(runs); j++ {
			b := runs[j]
			if a.Started.Truncate(time.Microsecond).Equal(b.Started.Truncate(time.Microsecond)) &&
				a.Seed == b.Seed && a.Config == b.Config && a.Name == b.Name && shardIndex(a) == shardIndex(b) {
				return fmt.Errorf("merge: %s and %s are the same run (%q, started %s, seed %d): merged, its operations would count twice",
					label(i), label(j), a.Name, a.Started.UTC().Format(time.RFC3339Nano), a.Seed)
			}
		}
	}
	if opts.Force {
		return nil
	}
	first := runs[0]
	for i, r := range runs[1:] {
		i++
		if r.Config != first.Config || r.Name != first.Name {
			return fmt.Errorf("merge: %s (config %q, name %q) and %s (config %q, name %q) ran different configs: %w",
				label(0), first.Config, first.Name, label(i), r.Config, r.Name, ErrNotShards)
		}
		if r.Warmup != first.Warmup || r.Measurement != first.Measurement || r.Rampdown != first.Rampdown {
			return fmt.Errorf("merge: %s (warm-up %v, measurement %v, ramp-down %v) and %s (%v, %v, %v) have different phases: %w",
				label(0), first.Warmup, first.Measurement, first.Rampdown, label(i), r.Warmup, r.Measurement, r.Rampdown, ErrNotShards)
		}
		apart := r.Started.Add(time.Duration(r.Warmup)).Sub(first.Started.Add(time.Duration(first.Warmup))).Abs()
		if tol := time.Duration(WindowTolerance * float64(first.Measurement)); apart > tol {
			return fmt.Errorf("merge: the measurement windows of %s and %s start %v apart, more than %.0f%% of the measurement (%v): %w",
				label(0), label(i), apart, 100*WindowTolerance, first.Measurement, ErrNotShards)
		}
	}
	return nil
}

// mergeRelayDelay fills s's relay-delay figures from runs; it returns a
// warning when they could not be merged exactly.
func mergeRelayDelay(s *SinkSummary, runs []*Run) string {
	var have, with int
	for _, r := range runs {
		if r.Sink.Messages > 0 || r.Sink.RelayDelayMax > 0 {
			have++
			if r.Sink.RelayDelay.Histogram != nil {
				with++
			}
		}
	}
	if have > 0 && with == have {
		h := metrics.NewHistogram()
		for _, r := range runs {
			if r.Sink.RelayDelay.Histogram != nil {
				h.Merge(r.Sink.RelayDelay.Histogram)
			}
		}
		s.RelayDelay = Histogram{h}
		s.RelayDelayP50 = Duration(time.Duration(h.ValueAtPercentile(50)) * time.Microsecond)
		s.RelayDelayP95 = Duration(time.Duration(h.ValueAtPercentile(95)) * time.Microsecond)
		s.RelayDelayMax = Duration(time.Duration(h.Max()) * time.Microsecond)
		return ""
	}
	for _, r := range runs {
		s.RelayDelayP50 = max(s.RelayDelayP50, r.Sink.RelayDelayP50)
		s.RelayDelayP95 = max(s.RelayDelayP95, r.Sink.RelayDelayP95)
		s.RelayDelayMax = max(s.RelayDelayMax, r.Sink.RelayDelayMax)
	}
	if have > 1 {
		return "relay delay p50/p95 are the largest of the merged runs' (no histograms to merge exactly)"
	}
	return ""
}

func sameRules(a, b compliance.Rules) bool {
	return a.MaxErrorPercent == b.MaxErrorPercent && slices.Equal(a.Functions, b.Functions)
}

func distinct(runs []*Run, get func(*Run) string) []string {
	set := make(map[string]bool)
	for _, r := range runs {
		set[get(r)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// joinDistinct is the common value of get over runs, or the sorted distinct
// non-empty values joined by ", ".
func joinDistinct(runs []*Run, get func(*Run) string) string {
	var vals []string
	for _, v := range distinct(runs, get) {
		if v != "" {
			vals = append(vals, v)
		}
	}
	return strings.Join(vals, ", ")
}

// sumSorted adds the values in ascending order, so that the floating-point
// result does not depend on the order of runs.
func sumSorted(runs []*Run, get func(*Run) float64) float64 {
	vals := make([]float64, len(runs))
	for i, r := range runs {
		vals[i] = get(r)
	}
	sort.Float64s(vals)
	var s float64
	for _, v := range vals {
		s += v
	}
	return s
}

// Drifts applies the steady-state rule (compliance.Steadiness) to the run's
// timeline against its table's rules: the functions whose p95 rose across
// the measurement window (none when steady, too short to tell, or the
// timeline cannot be merged).
func (r *Run) Drifts() []compliance.Drift {
	ds, err := compliance.Steadiness(r.Timeline, r.Table.Rules())
	if err != nil {
		return nil
	}
	return ds
}
