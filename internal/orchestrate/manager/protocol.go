// Package manager is the benchmark manager of a sharded run (SPEC's role in
// SPECmail2008's kit): one manager holds the SMTP sink, waits until N load
// generators have registered over HTTP, gives every step of the campaign
// (one run, or each run of a sweep, compare-tls, size or certify) to all
// of them with a common start instant, receives each shard's report,
// reconciles the remote deliveries against its sink and merges the shards
// into the step's one report (docs/distributed.md).
//
// The generators' side is Serve (mailbench run --manager ADDR). Every
// request carries the shared token as a bearer token; what does not
// parse is refused with 400 and a reason, and no state changes.
package manager

import (
	"encoding/json"
	"time"
)

// The HTTP endpoints, all under APIPrefix, all POST except StepPath (GET).
const (
	APIPrefix    = "/v1/"
	RegisterPath = APIPrefix + "register" // Hello → Welcome
	StepPath     = APIPrefix + "step"     // ?after=SEQ, long poll → Step, or 204
	BeatPath     = APIPrefix + "beat"     // during a step → Beat
	ResultPath   = APIPrefix + "result"   // ?step=SEQ, a report.Run's JSON
	FailPath     = APIPrefix + "fail"     // ?step=SEQ (0: before any step), Failure
)

// GeneratorHeader carries the generator's id (Welcome.ID) on every request
// after registration.
const GeneratorHeader = "X-Mailbench-Generator"

// maxRequestBytes bounds what the manager reads of a request other than a
// report (report.MaxJSONSize bounds those).
const maxRequestBytes = 64 << 10

// Hello is a generator's registration.
type Hello struct {
	// Version is the generator's mailbench version (version.String()):
	// it must be the manager's.
	Version string `json:"version"`
	// ConfigHash is ConfigDigest of the generator's own workload config
	// (its password aside), which must be the manager's; "" when the
	// generator has no config of its own and runs the manager's.
	ConfigHash string `json:"config_hash"`
	// Host names the generator in the manager's messages (its hostname).
	Host string `json:"host"`
	// Index asks for this shard (Kubernetes' JOB_COMPLETION_INDEX); -1:
	// the manager assigns the lowest free one.
	Index int `json:"index"`
}

// Welcome is the manager's answer to a registration.
type Welcome struct {
	ID    string `json:"id"` // the generator's id for GeneratorHeader
	Index int    `json:"index"`
	Count int    `json:"count"`
	// ManagerTime is the manager's clock when it answered, which the
	// generator compares with its own (MaxClockOffset).
	ManagerTime time.Time `json:"manager_time"`
	// MaxClockOffset is how far the generator's clock may be from the
	// manager's: the shards' windows, and the remote delivery times that
	// compare the sink's clock with the generators', depend on it.
	MaxClockOffset time.Duration `json:"max_clock_offset_ns"`
}

// Step is one run for every generator to carry out, or the end.
type Step struct {
	Seq  int  `json:"seq"`
	Done bool `json:"done,omitempty"` // no more steps: the generator exits
	// Verdict is the manager's final word, with Done (for the generator's
	// log).
	Verdict string `json:"verdict,omitempty"`
	// Config is the step's workload config (EncodeConfig: JSON without
	// the users' password); ConfigHash the SHA-256 of that JSON.
	Config json.RawMessage `json:"config,omitempty"`
	// File is the manager's name of the config file: the shards report
	// it, and relative paths in the config (users.file) resolve against
	// it on every generator.
	File       string `json:"file,omitempty"`
	ConfigHash string `json:"config_hash,omitempty"`
	// StartAt is the common start instant of the step's window.
	StartAt time.Time `json:"start_at,omitzero"`
	Index   int       `json:"index"`
	Count   int       `json:"count"`
}

// Beat is the answer to a heartbeat: Stop asks the generator to end its
// step's arrivals now and report what it has (the manager was stopped, or
// another shard failed).
type Beat struct {
	Stop bool `json:"stop,omitempty"`
}

// Failure is a generator's word that it cannot carry out a step (or, with
// step 0, cannot take part at all).
type Failure struct {
	Error string `json:"error"`
}

// errorBody is the JSON of every refusal.
type errorBody struct {
	Error string `json:"error"`
}
