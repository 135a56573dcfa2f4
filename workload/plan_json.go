package workload

import (
	"encoding/json"
	"io"
)

// PlanSchema names the JSON form of a Plan (`mailbench check --json`).
const PlanSchema = "mailbench-plan/1"

// planJSON is a Plan on the wire: snake_case names, durations in seconds,
// every figure an expectation (docs/check-json.md).
type planJSON struct {
	Schema              string             `json:"schema"`
	Name                string             `json:"name"`
	File                string             `json:"file,omitempty"`
	Embedded            bool               `json:"embedded"`
	Endpoints           []endpointJSON     `json:"endpoints"`
	PasswordFrom        string             `json:"password_from"`
	Users               int                `json:"users,omitempty"`
	UsersFile           string             `json:"users_file,omitempty"`
	SessionsPerHour     float64            `json:"sessions_per_hour"`
	SessionsPerUserHour float64            `json:"sessions_per_user_hour"`
	LoadOfUsers         float64            `json:"load_of_users"`
	Phases              []phaseJSON        `json:"phases"`
	MeasuredSessions    float64            `json:"measured_sessions"`
	SubmittedPerHour    float64            `json:"submitted_per_hour"`
	InboundPerHour      float64            `json:"inbound_per_hour"`
	MeanSessionSeconds  float64            `json:"mean_session_seconds"`
	Concurrency         float64            `json:"concurrency"`
	InboundConcurrency  float64            `json:"inbound_concurrency"`
	MaxConcurrent       int                `json:"max_concurrent"`
	Mix                 []sessionPlanJSON  `json:"mix"`
	Functions           []functionPlanJSON `json:"functions"`
	Rules               []functionPlanJSON `json:"rules"`
	MaxErrorPercent     float64            `json:"max_error_percent"`
	MemoryBytes         int64              `json:"memory_bytes"`
	Sockets             SocketEstimate     `json:"sockets"`
	Warnings            []string           `json:"warnings"`
}

type endpointJSON struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	TLS     string `json:"tls"`
	Auth    string `json:"auth,omitempty"`
}

type phaseJSON struct {
	Name     Phase   `json:"name"`
	Seconds  float64 `json:"seconds"`
	Recorded bool    `json:"recorded"`
}

type sessionPlanJSON struct {
	Type            string   `json:"type"`
	Weight          float64  `json:"weight"`
	Percent         float64  `json:"percent"`
	SessionsPerHour float64  `json:"sessions_per_hour"`
	Steps           float64  `json:"steps"`
	Seconds         float64  `json:"seconds"`
	Functions       []string `json:"functions"`
}

type functionPlanJSON struct {
	Function        string  `json:"function"`
	PerHour         float64 `json:"per_hour"`
	LimitSeconds    float64 `json:"limit_seconds"`
	RequiredPercent float64 `json:"required_percent"`
}

// WriteJSON writes p as JSON (PlanSchema): what `mailbench check` prints,
// for scripts. It performs I/O only on w.
func (p *Plan) WriteJSON(w io.Writer) error {
	out := planJSON{
		Schema: PlanSchema, Name: p.Name, File: p.File, Embedded: p.Embedded, PasswordFrom: p.PasswordFrom,
		Users: p.Users, UsersFile: p.UsersFile, SessionsPerHour: p.SessionsPerHour, SessionsPerUserHour: p.SessionsPerUserHour,
		MeasuredSessions: p.MeasuredSessions, SubmittedPerHour: p.SubmittedPerHour, InboundPerHour: p.InboundPerHour,
		MeanSessionSeconds: p.MeanSessionDuration.Seconds(), Concurrency: p.Concurrency, InboundConcurrency: p.InboundConcurrency,
		MaxConcurrent: p.MaxConcurrent, MaxErrorPercent: p.MaxErrorPercent, MemoryBytes: p.Memory.Total, Sockets: p.Sockets(),
		Endpoints: []endpointJSON{}, Phases: []phaseJSON{}, Mix: []sessionPlanJSON{}, Functions: []functionPlanJSON{},
		Rules: []functionPlanJSON{}, Warnings: append([]string{}, p.Warnings...),
	}
	if p.SessionsPerUserHour > 0 {
		out.LoadOfUsers = p.SessionsPerHour / p.SessionsPerUserHour
	}
	for _, e := range p.Endpoints {
		out.Endpoints = append(out.Endpoints, endpointJSON{Name: e.Name, Address: e.Address, TLS: string(e.TLS), Auth: e.Auth})
	}
	for _, ph := range p.Phases {
		out.Phases = append(out.Phases, phaseJSON{Name: ph.Name, Seconds: ph.Duration.Seconds(), Recorded: ph.Recorded})
	}
	for _, s := range p.Mix {
		fs := make([]string, len(s.Functions))
		for i, f := range s.Functions {
			fs[i] = string(f)
		}
		out.Mix = append(out.Mix, sessionPlanJSON{Type: s.Type, Weight: s.Weight, Percent: s.Percent, SessionsPerHour: s.SessionsPerHour,
			Steps: s.Steps, Seconds: s.Duration.Seconds(), Functions: fs})
	}
	conv := func(fs []FunctionPlan) []functionPlanJSON {
		out := []functionPlanJSON{}
		for _, f := range fs {
			out = append(out, functionPlanJSON{Function: string(f.Function), PerHour: f.PerHour, LimitSeconds: f.Limit.Seconds(), RequiredPercent: f.RequiredPercent})
		}
		return out
	}
	out.Functions, out.Rules = conv(p.Functions), conv(p.Rules)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
