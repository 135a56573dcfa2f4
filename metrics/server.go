package metrics

import (
	"math"
	"time"
)

// ServerReport is what was observed of the server under test beside a run
// (internal/observe/serverwatch; [server] of the config): each figure's mean and
// peak over the measurement window, the figures at every sample of the
// run, and how each source fared. These are observations made alongside
// the load, never a proven cause of a result.
type ServerReport struct {
	// IntervalSeconds is the time between samples (the timeline's).
	IntervalSeconds float64        `json:"interval_seconds"`
	Sources         []ServerSource `json:"sources"`
	// Figures are over the measurement window, in the order the sources
	// gave them.
	Figures []ServerFigure `json:"figures"`
	// Timeline is every sample of the run, warm-up to the end (at most
	// MaxServerPoints; Dropped counts those beyond).
	Timeline []ServerPoint `json:"timeline"`
	Dropped  int           `json:"dropped,omitempty"`
	// Cores is the host's number of CPUs (host figures' "of N cores").
	Cores int `json:"cores,omitempty"`
}

// MaxServerPoints bounds a ServerReport's timeline: at the auto interval a
// run has about 50 samples; a one-second interval over a day 86,400.
const MaxServerPoints = 20_000

// ServerSource is one source and how its samples went.
type ServerSource struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // host, processes, metrics, command
	Samples  int    `json:"samples"`
	Failures int    `json:"failures"`
	// LastError is the last failure's message ("" without one).
	LastError string `json:"last_error,omitempty"`
}

// ServerFigure is one figure over the measurement window.
type ServerFigure struct {
	Name    string  `json:"name"` // source.figure: "host.cpu_percent", "dovecot.cpu_cores"
	Unit    string  `json:"unit"` // "%", "cores", "bytes", "bytes/s", "/s", ""
	Mean    float64 `json:"mean"`
	Peak    float64 `json:"peak"`
	Samples int     `json:"samples"`
}

// ServerPoint is one sample of every figure.
type ServerPoint struct {
	At     time.Time          `json:"at"`
	Values map[string]float64 `json:"values"`
}

// Figure returns the named figure and whether the report has it.
func (r *ServerReport) Figure(name string) (ServerFigure, bool) {
	if r == nil {
		return ServerFigure{}, false
	}
	for _, f := range r.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return ServerFigure{}, false
}

// SummarizeServer computes each figure's mean and peak over the points in
// [from, to), in the order of units (which lists every figure once). It
// doesn't perform I/O.
func SummarizeServer(points []ServerPoint, order []string, units map[string]string, from, to time.Time) []ServerFigure {
	out := []ServerFigure{}
	for _, name := range order {
		f := ServerFigure{Name: name, Unit: units[name], Peak: math.Inf(-1)}
		sum := 0.0
		for _, p := range points {
			v, ok := p.Values[name]
			if !ok || p.At.Before(from) || !p.At.Before(to) {
				continue
			}
			f.Samples++
			sum += v
			f.Peak = max(f.Peak, v)
		}
		if f.Samples == 0 {
			continue
		}
		f.Mean = sum / float64(f.Samples)
		out = append(out, f)
	}
	return out
}
