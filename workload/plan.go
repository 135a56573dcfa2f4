package workload

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// NominalOpTime is the time the plan assumes one timed operation takes when
// it estimates session durations. It is a planning figure, not a
// measurement: on a loaded server operations take longer and concurrency
// grows accordingly.
const NominalOpTime = 10 * time.Millisecond

// Plan is what a config asks for, worked out: rates, the session mix,
// estimated concurrency, phases and the timed functions with their limits.
// It is what `mailbench check` prints. A Plan doesn't perform I/O; all its
// figures are expectations, not measurements.
type Plan struct {
	Name string
	File string // "" for a config built in code

	Embedded   bool   // target.embedded
	IMAP, SMTP string // target addresses ("" when embedded)

	SessionsPerHour     float64 // the target arrival rate (Config.TargetRate)
	SessionsPerUserHour float64
	// Users is users.count; 0 when the users come from UsersFile.
	Users     int
	UsersFile string

	Mix []SessionPlan // in the order check, read, cleanup, folders, send

	// SubmittedPerHour are messages sent by send sessions; InboundPerHour
	// the background remote→local messages.
	SubmittedPerHour float64
	InboundPerHour   float64

	// MeanSessionDuration is the mix-weighted mean of SessionPlan.Duration.
	MeanSessionDuration time.Duration
	// Concurrency is Little's law: SessionsPerHour/3600 × MeanSessionDuration
	// (user sessions only; InboundConcurrency is the background mail).
	Concurrency        float64
	InboundConcurrency float64
	MaxConcurrent      int

	Phases []PhasePlan
	// MeasuredSessions is the expected number of sessions started in the
	// measurement window.
	MeasuredSessions float64

	Functions []FunctionPlan // in measure.AllFunctions order
	// Rules are the rows of the run's compliance table, the one place they
	// are decided: every SPEC function (a row with no operations fails, as
	// in SPEC's table), and each delivery time where mail of that kind is
	// expected (PerHour > 0 in Functions).
	Rules           []FunctionPlan
	MaxErrorPercent float64

	// Memory estimates what the run holds in memory (MemoryEstimate with
	// Users; see budget.go). `mailbench run` refuses a run whose estimate
	// exceeds the machine's available memory.
	Memory MemoryEstimate

	// Warnings are things a user likely wants to know before a run.
	Warnings []string

	// Groups is the population of [population], by entry (nil without
	// it); Population its lines for `check`.
	Groups     []GroupPlan
	Population []string

	mem memoryInputs

	// Endpoints are the connections of the run as `check` shows them:
	// IMAP, SMTP submission, inbound SMTP, and the sink when enabled.
	Endpoints []EndpointPlan
	// PasswordFrom says where the users' password comes from, never the
	// password: "users.file", "$VAR, else users.password", "$VAR",
	// "users.password".
	PasswordFrom string
}

// EndpointPlan is one endpoint's address, TLS and authentication.
type EndpointPlan struct {
	Name     string          // "IMAP", "SMTP submission", "inbound SMTP", "sink"
	Address  string          // "embedded" for the embedded target
	TLS      measure.TLSMode // "none", "starttls", "implicit"
	CAFile   string          // "" : the system's roots (the embedded target's own CA when embedded)
	Server   string          // server_name; "" : the address's host
	Insecure bool            // insecure_skip_verify
	Resume   bool            // session_resumption
	MinTLS   string          // min_tls_version; "" : Go's default
	CertFile string          // the sink's certificate
	Auth     string          // the mechanism; "" for the sink (it takes no authentication)
}

// GroupPlan is one entry of the population with its derived rates.
type GroupPlan struct {
	Name   string // "heavy/desktop"
	Client string // the client profile's source
	GroupRates
}

// SessionPlan is one session type of the mix.
type SessionPlan struct {
	Type            string  // "check", "read", "cleanup", "folders", "send"
	Weight          float64 // as configured
	Percent         float64 // Weight / sum of weights × 100
	SessionsPerHour float64
	// Steps is the mean number of timed operations per session (read
	// sessions fetch bodies_min..bodies_max bodies: their mean is used).
	Steps float64
	// Duration estimates a session: Steps × (think time mean + NominalOpTime).
	Duration  time.Duration
	Functions []measure.Function // the timed functions it runs
}

// PhasePlan is one part of the run's timeline.
type PhasePlan struct {
	Name     Phase
	Duration time.Duration
	Recorded bool // only the measurement phase is recorded
}

// FunctionPlan is one timed function the run will report.
type FunctionPlan struct {
	Function measure.Function
	// PerHour is the expected number of operations per hour (for delivery
	// times: deliveries, one per recipient of that kind, as the run counts
	// them).
	PerHour         float64
	Limit           time.Duration
	RequiredPercent float64 // the row passes when strictly more are within Limit
}

// Step is one timed operation of a session script.
type Step struct {
	Function measure.Function
	// Repeated steps run bodies_min..bodies_max times, the count drawn
	// once the session has logged in (read sessions' FETCH_NUM_BODYALL).
	Repeated bool
}

// sessionSteps lists the steps of each session type in order. It is the
// one list: the plan counts from it and session scripts perform it.
var sessionSteps = map[SessionKind][]Step{
	Check:   {{Function: measure.IMAPConnect}, {Function: measure.IMAPSelectInbox}, {Function: measure.IMAPFetchRange}},
	Read:    {{Function: measure.IMAPConnect}, {Function: measure.IMAPSelectInbox}, {Function: measure.IMAPUIDFetch}, {Function: measure.IMAPFetchBody, Repeated: true}},
	Cleanup: {{Function: measure.IMAPConnect}, {Function: measure.IMAPSelectInbox}, {Function: measure.IMAPStore}, {Function: measure.IMAPUIDStore}, {Function: measure.IMAPExpunge}},
	Folders: {{Function: measure.IMAPConnect}, {Function: measure.IMAPList}, {Function: measure.IMAPLsub}, {Function: measure.IMAPSelectFolder}, {Function: measure.IMAPFetchRange}},
	Send:    {{Function: measure.SMTPConnect}, {Function: measure.SMTPData}, {Function: measure.IMAPConnect}, {Function: measure.IMAPAppend}},
	Inbound: {{Function: measure.SMTPConnect}, {Function: measure.SMTPData}},
}

// SessionSteps returns the steps of session type k in order (a copy).
func SessionSteps(k SessionKind) []Step { return append([]Step(nil), sessionSteps[k]...) }

// NewPlan validates c and works out its plan. It doesn't perform I/O.
func NewPlan(c *Config) (*Plan, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{
		Name:                c.Name,
		File:                c.File,
		Embedded:            c.Target.Embedded,
		SessionsPerHour:     c.TargetRate(),
		SessionsPerUserHour: c.Load.SessionsPerUserHour,
		UsersFile:           c.Users.File,
		MaxConcurrent:       c.Load.MaxConcurrent,
		MaxErrorPercent:     c.Compliance.MaxErrorPercent,
	}
	if !p.Embedded {
		p.IMAP, p.SMTP = c.Target.IMAP.Address, c.Target.SMTP.Address
	}
	if p.UsersFile == "" {
		p.Users = c.Users.Count
	}

	var total float64
	for _, st := range c.sessionTypes() {
		total += st.T.Weight
	}
	perOp := c.Load.ThinkTime.Duration + NominalOpTime
	opsPerHour := map[measure.Function]float64{}
	var meanDur float64
	for _, st := range c.sessionTypes() {
		sp := SessionPlan{Type: st.Name, Weight: st.T.Weight, Percent: st.T.Weight / total * 100}
		sp.SessionsPerHour = p.SessionsPerHour * st.T.Weight / total
		for _, step := range sessionSteps[SessionKind(st.Name)] {
			n := 1.0
			if step.Repeated {
				if n = float64(st.T.BodiesMin+st.T.BodiesMax) / 2; n <= 0 {
					continue
				}
			}
			sp.Steps += n
			opsPerHour[step.Function] += sp.SessionsPerHour * n
			sp.Functions = append(sp.Functions, step.Function)
		}
		sp.Duration = time.Duration(sp.Steps * float64(perOp))
		meanDur += sp.Percent / 100 * float64(sp.Duration)
		p.Mix = append(p.Mix, sp)
	}
	p.MeanSessionDuration = time.Duration(meanDur)
	p.Concurrency = p.SessionsPerHour / 3600 * p.MeanSessionDuration.Seconds()

	p.SubmittedPerHour = p.SessionsPerHour * c.Sessions.Send.Weight / total
	p.InboundPerHour = p.SessionsPerHour * c.Load.InboundPerSession
	opsPerHour[measure.SMTPConnect] += p.InboundPerHour
	opsPerHour[measure.SMTPData] += p.InboundPerHour
	p.InboundConcurrency = p.InboundPerHour / 3600 * (2 * NominalOpTime).Seconds()

	// Delivery: one delivery time per recipient, as the ledger measures
	// it; an inbound message has one local recipient.
	local, remote := recipientsPerMessage(c.Messages)
	opsPerHour[measure.DeliveryLocal] = p.InboundPerHour + p.SubmittedPerHour*local
	if c.Sink.Enabled {
		opsPerHour[measure.DeliveryRemote] = p.SubmittedPerHour * remote
	}

	// The connected clients: an IDLE per renewal and after every
	// announcement, and a notification per local delivery to one of them.
	if n := c.Clients.Connected; n > 0 {
		share := 1.0
		if c.Users.Count > 0 && c.Users.File == "" {
			share = min(float64(n)/float64(c.Users.Count), 1)
		}
		notified := opsPerHour[measure.DeliveryLocal] * share
		opsPerHour[measure.NewMailNotification] = notified
		opsPerHour[measure.IMAPIdle] = float64(n)*3600/max(c.Clients.IdleRenew.Seconds(), 1) + notified
	}

	p.addPopulation(c, opsPerHour, local, remote)

	for _, f := range measure.AllFunctions {
		if opsPerHour[f] <= 0 {
			continue
		}
		limit, req := c.Limit(f)
		p.Functions = append(p.Functions, FunctionPlan{Function: f, PerHour: opsPerHour[f], Limit: limit, RequiredPercent: req})
	}

	for _, f := range measure.SPECFunctions {
		if c.HasPopulation() && p.SessionsPerHour == 0 {
			break // no SPEC users: no SPEC rows
		}
		limit, req := c.Limit(f)
		p.Rules = append(p.Rules, FunctionPlan{Function: f, PerHour: opsPerHour[f], Limit: limit, RequiredPercent: req})
	}
	for _, f := range append([]measure.Function{measure.DeliveryLocal, measure.DeliveryRemote}, measure.ClientFunctions...) {
		if opsPerHour[f] > 0 {
			limit, req := c.Limit(f)
			p.Rules = append(p.Rules, FunctionPlan{Function: f, PerHour: opsPerHour[f], Limit: limit, RequiredPercent: req})
		}
	}

	ph := c.Phases
	p.Phases = []PhasePlan{
		{Warmup, ph.Warmup.Duration, false},
		{Measurement, ph.Measurement.Duration, true},
		{Rampdown, ph.Rampdown.Duration, false},
		{Settle, ph.Settle.Duration, false},
	}
	p.MeasuredSessions = p.SessionsPerHour * ph.Measurement.Hours()

	p.mem = newMemoryInputs(c)
	p.Memory = p.MemoryEstimate(p.Users)
	p.Warnings = planWarnings(c, p)
	p.Endpoints, p.PasswordFrom = endpointPlans(c)
	return p, nil
}

// addPopulation adds the population's groups and their expected
// operations (derived from the profiles, as every figure of a plan).
func (p *Plan) addPopulation(c *Config, opsPerHour map[measure.Function]float64, local, remote float64) {
	folders := len(c.Mailboxes.Standard()) + len(c.Mailboxes.Folders)
	renew := c.Clients.IdleRenew.Duration
	if renew <= 0 {
		renew = 25 * time.Minute
	}
	for _, g := range c.Groups() {
		r := g.Rates(c.Load.SessionsPerUserHour)
		p.Groups = append(p.Groups, GroupPlan{Name: g.Name(), Client: g.Client.Source, GroupRates: r})
		if g.User.SPEC {
			continue
		}
		cl := g.Client
		online := cl.HourFraction()
		inboxConnects := r.ConnectsPerHour / float64(cl.Connections)
		opsPerHour[measure.ClientConnect] += r.ConnectsPerHour
		if cl.Resync != ResyncNone {
			opsPerHour[measure.ClientResync] += inboxConnects
		}
		if cl.ListMessages > 0 {
			opsPerHour[measure.ClientList] += inboxConnects
		}
		noticed := r.ReceivedPerHour * online
		opsPerHour[measure.ClientNewMail] += noticed
		opsPerHour[measure.ClientOpen] += r.OpenedPerHour
		opsPerHour[measure.ClientChange] += r.ChangedPerHour
		opsPerHour[measure.ClientSend] += r.SentPerHour
		if cl.Poll > 0 {
			unwatched := max(folders-(cl.Connections-1), 0)
			opsPerHour[measure.ClientStatus] += float64(g.Count) * online * float64(unwatched) * float64(time.Hour) / float64(cl.Poll)
		}
		if cl.Idle {
			opsPerHour[measure.NewMailNotification] += noticed
			// An IDLE per renewal, and again after everything the
			// client does on its INBOX connection.
			opsPerHour[measure.IMAPIdle] += r.ConnectionsHeld*float64(time.Hour)/float64(renew) + noticed + r.OpenedPerHour + r.ChangedPerHour
		}
		p.InboundPerHour += r.ReceivedPerHour
		p.SubmittedPerHour += r.SentPerHour
		opsPerHour[measure.DeliveryLocal] += r.ReceivedPerHour + r.SentPerHour*local
		if c.Sink.Enabled {
			opsPerHour[measure.DeliveryRemote] += r.SentPerHour * remote
		}
	}
	p.Population = c.describeGroups()
}

// endpointPlans lists c's endpoints and where its password comes from.
func endpointPlans(c *Config) ([]EndpointPlan, string) {
	ep := func(name string, e Endpoint) EndpointPlan {
		addr := e.Address
		if c.Target.Embedded {
			addr = "embedded"
		}
		return EndpointPlan{Name: name, Address: addr, TLS: e.TLS, CAFile: e.CAFile, Server: e.ServerName,
			Insecure: e.InsecureSkipVerify, Resume: e.SessionResumption, MinTLS: e.MinTLSVersion, Auth: e.Auth}
	}
	eps := []EndpointPlan{
		ep("IMAP", c.Target.IMAP), ep("SMTP submission", c.Target.SMTP), ep("inbound SMTP", c.Target.InboundEndpoint()),
	}
	if c.Sink.Enabled {
		eps = append(eps, EndpointPlan{Name: "sink", Address: c.Sink.Listen, TLS: c.Sink.TLS, CertFile: c.Sink.CertFile})
	}
	var pw string
	switch u := c.Users; {
	case u.File != "":
		pw = "users.file"
	case u.PasswordEnv != "" && u.Password != "":
		pw = "$" + u.PasswordEnv + ", else users.password"
	case u.PasswordEnv != "":
		pw = "$" + u.PasswordEnv
	default:
		pw = "users.password"
	}
	return eps, pw
}

// recipientsPerMessage returns the mean number of local and of remote
// recipients of a submitted message: the recipient count uniform within
// each bucket, each recipient remote with probability remote_share.
func recipientsPerMessage(m MessagesConfig) (local, remote float64) {
	var total float64
	for _, b := range m.Recipients {
		total += b.Share
	}
	if total <= 0 {
		return 0, 0
	}
	var mean float64
	for _, b := range m.Recipients {
		mean += b.Share / total * float64(b.Min+b.Max) / 2
	}
	return mean * (1 - m.RemoteShare), mean * m.RemoteShare
}

func planWarnings(c *Config, p *Plan) []string {
	var w []string
	if p.Concurrency > 0.8*float64(p.MaxConcurrent) {
		w = append(w, fmt.Sprintf("estimated concurrency %.0f is near load.max_concurrent_sessions %d: sessions will be dropped", p.Concurrency, p.MaxConcurrent))
	}
	if p.MeasuredSessions < 30 && !(len(p.Groups) > 0 && p.SessionsPerHour == 0) {
		w = append(w, fmt.Sprintf("only ~%.0f sessions start in the measurement window: percentages will be coarse", p.MeasuredSessions))
	}
	if p.Users > 0 && p.SessionsPerHour > 0 {
		if perUser := p.SessionsPerHour / float64(p.Users); perUser*(p.MeanSessionDuration.Hours()) > 1 {
			w = append(w, fmt.Sprintf("%d users cannot sustain %.0f sessions/hour of %s each: users would overlap", p.Users, p.SessionsPerHour, p.MeanSessionDuration.Round(time.Millisecond)))
		}
	}
	for _, g := range c.Groups() {
		if !g.User.SPEC && g.User.ActionDelay > c.Phases.Warmup.Duration {
			w = append(w, fmt.Sprintf("%s: its users act on new mail %v after it arrives (mean), more than the %v warm-up: the window starts before opens and changes reach their planned rate (a longer warm-up, or a shorter action_delay)", g.Name(), g.User.ActionDelay, c.Phases.Warmup.Duration))
		}
	}
	// A client row whose operations come rarely may see none in the
	// window, and a row without operations fails.
	for _, r := range p.Rules {
		if expect := r.PerHour * c.Phases.Measurement.Hours(); c.HasPopulation() && slices.Contains(measure.ClientFunctions, r.Function) && expect < 10 {
			w = append(w, fmt.Sprintf("%s: ~%.1f operations expected in the measurement window: a longer window (or more users) decides it better", r.Function, expect))
		}
	}
	if !c.Sink.Enabled && c.Messages.RemoteShare > 0 {
		w = append(w, "the sink is disabled but messages.remote_share > 0: remote deliveries go unmeasured")
	}
	for _, ep := range []struct {
		name string
		e    Endpoint
	}{{"imap", c.Target.IMAP}, {"smtp", c.Target.SMTP}} {
		if !c.Target.Embedded && ep.e.InsecureSkipVerify && ep.e.TLS != "none" {
			w = append(w, fmt.Sprintf("target.%s.insecure_skip_verify: certificates are not verified", ep.name))
		}
	}
	return w
}

// WriteText writes the plan for people, as `mailbench check` prints it. It
// never shows a password.
func (p *Plan) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	name := p.Name
	if p.File != "" {
		name += " (" + p.File + ")"
	}
	ew.printf("config:      %s\n", name)
	if p.Embedded {
		ew.printf("target:      embedded\n")
	} else {
		ew.printf("target:      IMAP %s, SMTP %s\n", p.IMAP, p.SMTP)
	}
	if len(p.Endpoints) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, e := range p.Endpoints {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Name, e.Address, e.describe(p.Embedded))
		}
		tw.Flush()
		ew.printf("password:    %s (never shown)\n", p.PasswordFrom)
	}
	users := fmt.Sprintf("%d", p.Users)
	if p.UsersFile != "" {
		users = "from " + p.UsersFile
	}
	ew.printf("users:       %s\n", users)
	load := p.SessionsPerHour / p.SessionsPerUserHour
	if len(p.Groups) > 0 {
		ew.printf("rate:        %s SPEC sessions/hour (%.2f/s): the spec users' %s sessions/user-hour\n",
			fmtNum(p.SessionsPerHour), p.SessionsPerHour/3600, fmtNum(p.SessionsPerUserHour))
	} else {
		ew.printf("rate:        %s sessions/hour (%.2f/s): the load of %s users at %s sessions/user-hour\n",
			fmtNum(p.SessionsPerHour), p.SessionsPerHour/3600, fmtNum(math.Ceil(load)), fmtNum(p.SessionsPerUserHour))
	}
	if len(p.Groups) == 0 && p.UsersFile == "" && p.Users > 0 && math.Abs(float64(p.Users)-load) > max(1, 0.02*load) {
		// The report's rule (report.UsersFigure): said here as run will say it.
		ew.printf("             with %d users configured (%s sessions an hour each), the report gives no users figure\n",
			p.Users, fmtNum(p.SessionsPerHour/float64(p.Users)))
	}
	if len(p.Population) > 0 {
		ew.printf("population:  %d groups (every figure derived from the profiles, per hour of the working day):\n", len(p.Population))
		for _, l := range p.Population {
			ew.printf("  - %s\n", l)
		}
		for _, g := range p.Groups {
			if g.Client != "" {
				ew.printf("    %s: %s\n", g.Name, g.Client)
			}
		}
	}
	var phases []string
	var total time.Duration
	for _, ph := range p.Phases {
		phases = append(phases, string(ph.Name)+" "+ph.Duration.String())
		total += ph.Duration
	}
	ew.printf("phases:      %s (total %s)\n", strings.Join(phases, ", "), total)
	ew.printf("measured:    ~%s sessions start in the measurement window\n", fmtNum(p.MeasuredSessions))
	ew.printf("mail:        %s submitted + %s inbound messages/hour\n", fmtNum(p.SubmittedPerHour), fmtNum(p.InboundPerHour))
	ew.printf("concurrency: ~%.1f sessions (Little's law: %.2f/s × %s mean session; cap %d) + ~%.2f inbound\n",
		p.Concurrency, p.SessionsPerHour/3600, p.MeanSessionDuration.Round(time.Millisecond), p.MaxConcurrent, p.InboundConcurrency)
	ew.printf("             (session ≈ steps × (think time + %s nominal operation))\n", NominalOpTime)
	ew.printf("memory:      %s\n", p.Memory)
	ew.printf("sockets:     %s\n", p.Sockets())

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(p.Groups) > 0 && p.SessionsPerHour == 0 {
		ew.printf("\nsession mix: none (the population has no spec users)\n")
	} else {
		ew.printf("\nsession mix:\n")
		fmt.Fprintf(tw, "  type\tweight\tshare\tsessions/h\tsteps\test. duration\t\n")
		for _, s := range p.Mix {
			fmt.Fprintf(tw, "  %s\t%s\t%.1f%%\t%s\t%s\t%s\t\n", s.Type, fmtNum(s.Weight), s.Percent, fmtNum(s.SessionsPerHour), fmtNum(s.Steps), s.Duration.Round(time.Millisecond))
		}
		tw.Flush()
	}
	ew.printf("\ntimed functions (pass: more than required%% within limit; errors < %s%%):\n", fmtNum(p.MaxErrorPercent))
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	// The name last, and long ones wrapped after an underscore, so that
	// the table fits 80 columns.
	fmt.Fprintf(tw, "  ops/h\tlimit\trequired\tfunction\n")
	for _, f := range p.Functions {
		name := wrapAtUnderscore(string(f.Function), 48)
		fmt.Fprintf(tw, "  %.0f\t%s\t>%s%%\t%s\n", f.PerHour, f.Limit, fmtNum(f.RequiredPercent), name[0])
		for _, more := range name[1:] {
			fmt.Fprintf(tw, "  \t\t\t  %s\n", more)
		}
	}
	tw.Flush()

	if len(p.Warnings) > 0 {
		ew.printf("\nwarnings:\n")
		for _, wr := range p.Warnings {
			ew.printf("  - %s\n", wr)
		}
	}
	return ew.err
}

// wrapAtUnderscore splits name into lines of at most width bytes, after
// an underscore where it can.
func wrapAtUnderscore(name string, width int) []string {
	var lines []string
	for len(name) > width {
		cut := strings.LastIndexByte(name[:width], '_') + 1
		if cut <= 0 {
			cut = width
		}
		lines = append(lines, name[:cut])
		name = name[cut:]
	}
	return append(lines, name)
}

// describe renders e's TLS and authentication: "tls none, auth login",
// "tls implicit (CA ca.pem, server name mail.test, resumption), auth plain".
func (e EndpointPlan) describe(embedded bool) string {
	tls := "tls " + orText(string(e.TLS), "none")
	if e.TLS != "" && e.TLS != "none" {
		var d []string
		switch {
		case e.Name == "sink":
			d = append(d, "certificate "+orText(e.CertFile, "generated"))
		case embedded:
			d = append(d, "CA the embedded target's own")
		case e.Insecure:
			d = append(d, "certificate NOT verified (insecure_skip_verify)")
		default:
			d = append(d, "CA "+orText(e.CAFile, "system roots"))
		}
		if e.Name != "sink" {
			if e.Server != "" {
				d = append(d, "server name "+e.Server)
			}
			if e.Resume {
				d = append(d, "resumption")
			}
			if e.MinTLS != "" {
				d = append(d, "min TLS "+e.MinTLS)
			}
		}
		tls += " (" + strings.Join(d, ", ") + ")"
	}
	if e.Name == "sink" {
		return tls + ", no auth (the server under test relays to it)"
	}
	return tls + ", auth " + orText(e.Auth, "none")
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// fmtNum renders a number with at most two decimals and no trailing zeros.
func fmtNum(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// errWriter keeps the first write error and drops later writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}
