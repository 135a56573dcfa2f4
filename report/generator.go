package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/metrics"
)

// GeneratorCPULimit is the share of its available cores (percent) above
// which the generator counts as the bottleneck of a run.
const GeneratorCPULimit = 90.0

// GeneratorMinLate is the fewest late arrivals (sessions, or inbound mail)
// that can make a run GENERATOR-BOUND on lateness: one or a few late starts
// in a short run are a GC pause or the machine's other work, not a
// generator short of anything (docs/run-rules.md, "GENERATOR-BOUND").
const GeneratorMinLate = 10

// lateCount is how many arrivals of h were later than tol.
func lateCount(h *hdrhistogram.Histogram, tol time.Duration) int64 {
	if h == nil {
		return 0
	}
	limit := tol.Microseconds()
	var n int64
	for _, b := range h.Distribution() {
		if b.From > limit {
			n += b.Count
		}
	}
	return n
}

// GeneratorHealth is how the load generator itself fared in the
// measurement window: how late it started what the schedule asked for, the
// CPU and GC pauses it used, and the operations it timed impossibly long.
// When the generator was the bottleneck the run is GENERATOR-BOUND: its
// figures say nothing about the server.
type GeneratorHealth struct {
	LateTolerance time.Duration // load.late_tolerance
	// SessionLateness and InboundLateness hold, per arrival due in the
	// window, its actual start minus its intended start (µs, mailbench's
	// histogram geometry); nil when not measured.
	SessionLateness, InboundLateness *hdrhistogram.Histogram
	CPUKnown                         bool
	CPU                              time.Duration // process CPU time in the window
	CPUWindow                        time.Duration // the window it was measured over
	Cores                            int           // cores the generator could use (GOMAXPROCS)
	GCPause                          time.Duration // stop-the-world GC pauses in the window
	GCCycles                         int64
	// Stalls counts operations observed longer than StallLimit
	// (op_timeout + margin), which a running generator cannot time: their
	// durations were clamped to StallLimit. WorstStall is the longest.
	Stalls     int64
	StallLimit time.Duration
	WorstStall time.Duration
	// Reasons is derived: Run.GeneratorBound, which needs the whole run.
	// WriteJSON computes it for the file's readers.
	Reasons []string
}

// CPUPercent is CPU over the cores available for the window (0 unknown).
func (g *GeneratorHealth) CPUPercent() float64 {
	if g == nil || !g.CPUKnown || g.CPUWindow <= 0 || g.Cores <= 0 {
		return 0
	}
	return 100 * g.CPU.Seconds() / (g.CPUWindow.Seconds() * float64(g.Cores))
}

// latenessP99 is the 99th percentile of h (0 when empty or nil).
func latenessP99(h *hdrhistogram.Histogram) time.Duration {
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.ValueAtQuantile(99)) * time.Microsecond
}

// BoundReasons lists why the generator was the bottleneck: lateness p99
// of sessions or inbound mail above the late tolerance with at least
// GeneratorMinLate of them late, CPU above
// GeneratorCPULimit of the cores available, or impossible durations. None:
// the generator kept up.
func (g *GeneratorHealth) BoundReasons() []string {
	if g == nil {
		return nil
	}
	var why []string
	tol := g.LateTolerance
	if tol <= 0 {
		tol = time.Second
	}
	for _, l := range []struct {
		name string
		h    *hdrhistogram.Histogram
	}{{"sessions", g.SessionLateness}, {"inbound mail", g.InboundLateness}} {
		if p := latenessP99(l.h); p > tol {
			if n := lateCount(l.h, tol); n >= GeneratorMinLate {
				why = append(why, fmt.Sprintf("%s started late: p99 %s ms behind schedule (late tolerance %v, %s late)", l.name, fmtMS(p), tol, fmtInt(n)))
			}
		}
	}
	if p := g.CPUPercent(); p > GeneratorCPULimit {
		why = append(why, fmt.Sprintf("generator CPU %.0f%% of %d cores (limit %.0f%%)", p, g.Cores, GeneratorCPULimit))
	}
	if g.Stalls > 0 {
		why = append(why, fmt.Sprintf("%s timed longer than op_timeout allows (%v, worst %s ms): the generator stalled",
			plural(g.Stalls, "operation", "operations"), g.StallLimit, fmtMS(g.WorstStall)))
	}
	return why
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmtInt(n) + " " + many
}

// mergeGenerator combines the shards' generator health: lateness
// histograms added, stalls and GC summed, the CPU of the busiest shard
// (each generator is its own machine). nil when no shard measured it.
func mergeGenerator(runs []*Run) *GeneratorHealth {
	var m *GeneratorHealth
	for _, r := range runs {
		g := r.Generator
		if g == nil {
			continue
		}
		if m == nil {
			m = &GeneratorHealth{}
		}
		m.LateTolerance = max(m.LateTolerance, g.LateTolerance)
		m.SessionLateness = addHistogram(m.SessionLateness, g.SessionLateness)
		m.InboundLateness = addHistogram(m.InboundLateness, g.InboundLateness)
		if g.CPUPercent() >= m.CPUPercent() && g.CPUKnown {
			m.CPUKnown, m.CPU, m.CPUWindow, m.Cores = true, g.CPU, g.CPUWindow, g.Cores
		}
		m.GCPause += g.GCPause
		m.GCCycles += g.GCCycles
		m.Stalls += g.Stalls
		m.StallLimit = max(m.StallLimit, g.StallLimit)
		m.WorstStall = max(m.WorstStall, g.WorstStall)
	}
	return m
}

func addHistogram(into, h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if h == nil {
		return into
	}
	if into == nil {
		into = metrics.NewHistogram()
	}
	into.Merge(h)
	return into
}

// PoissonBand is the central 95% range of the number of arrivals of a
// Poisson process with mean lambda: the scheduled count of a run falls in
// it 95 times in 100. Exact quantiles below a mean of 1000, the normal
// approximation above.
func PoissonBand(lambda float64) (lo, hi int64) {
	if !(lambda > 0) || math.IsInf(lambda, 1) {
		return 0, 0
	}
	if lambda > 1000 {
		s := 1.959964 * math.Sqrt(lambda)
		return int64(math.Max(0, math.Floor(lambda-s))), int64(math.Ceil(lambda + s))
	}
	// Walk the CDF; pmf(k) in log space to avoid underflow.
	var cdf float64
	lo = -1
	for k := int64(0); ; k++ {
		lg, _ := math.Lgamma(float64(k) + 1)
		cdf += math.Exp(float64(k)*math.Log(lambda) - lambda - lg)
		if lo < 0 && cdf >= 0.025 {
			lo = k
		}
		if cdf >= 0.975 {
			return lo, k
		}
	}
}

// joinReasons renders reasons as "a; b".
func joinReasons(why []string) string { return strings.Join(why, "; ") }

type jsonLateness struct {
	Count     int64  `json:"count"`
	P50US     int64  `json:"p50_us"`
	P99US     int64  `json:"p99_us"`
	MaxUS     int64  `json:"max_us"`
	Histogram string `json:"histogram"`
}

type jsonGenerator struct {
	Bound           bool          `json:"bound"`
	Reasons         []string      `json:"reasons"`
	LateToleranceUS int64         `json:"late_tolerance_us"`
	SessionLateness *jsonLateness `json:"session_lateness,omitempty"`
	InboundLateness *jsonLateness `json:"inbound_lateness,omitempty"`
	CPUKnown        bool          `json:"cpu_known"`
	CPUUS           int64         `json:"cpu_us"`
	CPUWindowUS     int64         `json:"cpu_window_us"`
	Cores           int           `json:"cores"`
	CPUPercent      float64       `json:"cpu_percent"`
	GCPauseUS       int64         `json:"gc_pause_us"`
	GCCycles        int64         `json:"gc_cycles"`
	Stalls          int64         `json:"stalls"`
	StallLimitUS    int64         `json:"stall_limit_us"`
	WorstStallUS    int64         `json:"worst_stall_us"`
}

func latenessToJSON(h *hdrhistogram.Histogram) (*jsonLateness, error) {
	if h == nil {
		return nil, nil
	}
	enc, err := metrics.EncodeHistogram(h)
	if err != nil {
		return nil, err
	}
	return &jsonLateness{Count: h.TotalCount(), P50US: h.ValueAtQuantile(50), P99US: h.ValueAtQuantile(99), MaxUS: h.Max(), Histogram: enc}, nil
}

// MarshalJSON writes g in the report's form (docs/report-schema.md):
// durations in microseconds, the lateness histograms with their
// percentiles, the derived CPU share and bound reasons.
func (g *GeneratorHealth) MarshalJSON() ([]byte, error) {
	j := &jsonGenerator{Reasons: g.Reasons, LateToleranceUS: us(g.LateTolerance), CPUKnown: g.CPUKnown,
		CPUUS: us(g.CPU), CPUWindowUS: us(g.CPUWindow), Cores: g.Cores, CPUPercent: g.CPUPercent(),
		GCPauseUS: us(g.GCPause), GCCycles: g.GCCycles, Stalls: g.Stalls, StallLimitUS: us(g.StallLimit), WorstStallUS: us(g.WorstStall)}
	j.Bound = len(j.Reasons) > 0
	if j.Reasons == nil {
		j.Reasons = []string{}
	}
	var err error
	if j.SessionLateness, err = latenessToJSON(g.SessionLateness); err != nil {
		return nil, fmt.Errorf("session lateness: %w", err)
	}
	if j.InboundLateness, err = latenessToJSON(g.InboundLateness); err != nil {
		return nil, fmt.Errorf("inbound lateness: %w", err)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote; the histograms are decoded
// (of mailbench's geometry only), the percentiles beside them are not read.
func (g *GeneratorHealth) UnmarshalJSON(b []byte) error {
	var j jsonGenerator
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*g = GeneratorHealth{LateTolerance: fromUS(j.LateToleranceUS), CPUKnown: j.CPUKnown, CPU: fromUS(j.CPUUS),
		CPUWindow: fromUS(j.CPUWindowUS), Cores: j.Cores, GCPause: fromUS(j.GCPauseUS), GCCycles: j.GCCycles,
		Stalls: j.Stalls, StallLimit: fromUS(j.StallLimitUS), WorstStall: fromUS(j.WorstStallUS)}
	if len(j.Reasons) > 0 {
		g.Reasons = j.Reasons
	}
	var err error
	if j.SessionLateness != nil {
		if g.SessionLateness, err = metrics.DecodeHistogram(j.SessionLateness.Histogram); err != nil {
			return fmt.Errorf("generator: session lateness: %w", err)
		}
	}
	if j.InboundLateness != nil {
		if g.InboundLateness, err = metrics.DecodeHistogram(j.InboundLateness.Histogram); err != nil {
			return fmt.Errorf("generator: inbound lateness: %w", err)
		}
	}
	return nil
}
