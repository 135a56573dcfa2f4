// Package resume lets a campaign of runs (sweep, compare-tls, size,
// certify) continue after it was interrupted: a Journal records every
// finished run's report in a state file as the run finishes, and on resume
// replays them in order instead of running them again. A campaign's next
// run depends only on the results before it, so the replay retraces the
// interrupted campaign exactly; the first run not in the journal runs for
// real and joins it.
package resume

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/lib/atomicfile"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// Schema and SchemaVersion identify a state file.
const (
	Schema        = "mailbench-campaign-state"
	SchemaVersion = 1
)

// entry is one finished run: the key of the config it ran, and its report.
type entry struct {
	Key    string          `json:"key"`
	Report json.RawMessage `json:"report"`
}

type state struct {
	Schema        string  `json:"schema"`
	SchemaVersion int     `json:"schema_version"`
	Command       string  `json:"command"`
	Version       string  `json:"version"`
	ConfigHash    string  `json:"config_hash"`
	Runs          []entry `json:"runs"`
}

// Journal is a campaign's state file. It is safe for concurrent use.
type Journal struct {
	path string
	mu   sync.Mutex
	st   state
	next int // the next entry to replay
	// Replayed counts the runs answered from the state file.
	Replayed int
}

// Open opens the state file at path for command (e.g. "size") of the
// mailbench version and the config whose ConfigHash is configHash:
// an existing file is read, and refused when another command, version or
// config made it; a missing one is started empty (written at the first
// finished run). It reads path.
func Open(path, command, version, configHash string) (*Journal, error) {
	j := &Journal{path: path, st: state{Schema: Schema, SchemaVersion: SchemaVersion, Command: command, Version: version, ConfigHash: configHash}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return j, nil
	case err != nil:
		return nil, err
	}
	var st state
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%s: not a campaign state file: %v", path, err)
	}
	switch {
	case st.Schema != Schema || st.SchemaVersion != SchemaVersion:
		return nil, fmt.Errorf("%s: schema %q version %d, want %q version %d", path, st.Schema, st.SchemaVersion, Schema, SchemaVersion)
	case st.Command != command:
		return nil, fmt.Errorf("%s: the state of a %q campaign, not of %q", path, st.Command, command)
	case st.Version != version:
		return nil, fmt.Errorf("%s: made by mailbench %s, this is %s: a campaign is resumed by the version that began it", path, st.Version, version)
	case st.ConfigHash != configHash:
		return nil, fmt.Errorf("%s: made with another config (hash %.12s…, this one %.12s…): a campaign is resumed with the config that began it", path, st.ConfigHash, configHash)
	}
	j.st = st
	return j, nil
}

// Finished is how many runs the state file holds.
func (j *Journal) Finished() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.st.Runs)
}

// key identifies what a run of cfg is: everything a campaign varies from
// run to run (rate, schedule seed, users, cap, phases, TLS), as the
// canonical hash of the config plus its schedule seed.
func key(cfg *workload.Config) string {
	return fmt.Sprintf("%s/%d/%g", ConfigHash(cfg), cfg.ScheduleSeed, cfg.Load.SessionsPerHour)
}

// Wrap returns run with the journal in front: while the state file has
// runs left, the next call answers with the next recorded report when the
// call's config is the one recorded (else it is an error: the campaign
// went another way than the one it resumes); after them every complete run
// (not partial, no error) is recorded as it finishes.
func (j *Journal) Wrap(run campaign.RunFunc) campaign.RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		k := key(cfg)
		j.mu.Lock()
		if j.next < len(j.st.Runs) {
			e := j.st.Runs[j.next]
			j.next++
			j.mu.Unlock()
			if e.Key != k {
				return nil, fmt.Errorf("resume: run %d of %s is not the run recorded there: the campaign took another path", j.next, j.path)
			}
			r, err := report.ReadJSON(bytes.NewReader(e.Report))
			if err != nil {
				return nil, fmt.Errorf("resume: run %d of %s: %w", j.next, j.path, err)
			}
			j.mu.Lock()
			j.Replayed++
			j.mu.Unlock()
			return r, nil
		}
		j.mu.Unlock()
		r, err := run(stop, kill, cfg)
		if err != nil || r == nil || r.Partial || r.CouldNotRun != "" {
			return r, err // not finished: run again on resume
		}
		if err := j.record(k, r); err != nil {
			return r, fmt.Errorf("resume: recording the run in %s: %w", j.path, err)
		}
		return r, nil
	}
}

// record appends one finished run and writes the state file (atomically:
// a kill while writing leaves the earlier state).
func (j *Journal) record(k string, r *report.Run) error {
	raw, err := report.EmbeddedJSON(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.Runs = append(j.st.Runs, entry{Key: k, Report: raw})
	j.next = len(j.st.Runs)
	f, err := atomicfile.Create(j.path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	if err := enc.Encode(&j.st); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// Note describes what the journal did, for the campaign's log: "resumed
// 3 finished runs from FILE" ("" when none was replayed).
func (j *Journal) Note() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Replayed == 0 {
		return ""
	}
	return fmt.Sprintf("resumed %d finished runs from %s (not run again)", j.Replayed, j.path)
}

// ConfigHash is the SHA-256 (hex) of c's canonical form: the
// JSON encoding of the Config as loaded (its unexported key lines are not
// part of it) — defaults filled in, every key in
// a fixed order, durations and sizes as strings — without the file's name,
// the users' password (users.password is blanked; users.password_env, a
// variable's name, stays) and ScheduleSeed. Two files that differ only in
// layout, comments, key order or keys written at their default value hash
// the same; any change to what a run does changes the hash. It doesn't
// perform I/O.
func ConfigHash(c *workload.Config) string {
	cc := *c
	cc.File, cc.ScheduleSeed = "", 0
	cc.Users.Password = ""
	data, err := json.Marshal(&cc)
	if err != nil { // a Config always encodes; keep the hash defined anyway
		data = []byte(err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
