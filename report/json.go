package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// SchemaVersion is the version of the JSON report written by WriteJSON.
const SchemaVersion = 1

// MaxJSONSize bounds what ReadJSON reads.
const MaxJSONSize = 64 << 20

// The JSON form; see docs/report-schema.md. Durations are integer
// microseconds (fields ending in _us), times RFC 3339 in UTC.
type jsonRun struct {
	SchemaVersion  int                      `json:"schema_version"`
	Tool           string                   `json:"tool"`
	Version        string                   `json:"version"`
	Config         string                   `json:"config"`
	Name           string                   `json:"name"`
	Seed           int64                    `json:"seed"`
	Started        string                   `json:"started"`
	Ended          string                   `json:"ended"`
	WarmupUS       int64                    `json:"warmup_us"`
	MeasurementUS  int64                    `json:"measurement_us"`
	RampdownUS     int64                    `json:"rampdown_us"`
	Partial        bool                     `json:"partial"`
	PartialReason  string                   `json:"partial_reason"`
	Target         Target                   `json:"target"`
	CouldNotRun    string                   `json:"could_not_run,omitempty"`
	Sessions       jsonSessions             `json:"sessions"`
	Inbound        InboundSummary           `json:"inbound"`
	Generator      *jsonGenerator           `json:"generator,omitempty"`
	Sink           jsonSink                 `json:"sink"`
	Warnings       []string                 `json:"warnings"`
	Delivery       *delivery.Reconciliation `json:"delivery,omitempty"`
	DeliveryChecks *CheckerSummary          `json:"delivery_checks,omitempty"`
	Clients        *ClientsSummary          `json:"clients,omitempty"`
	ServerClock    *delivery.ClockCheck     `json:"server_clock,omitempty"`
	DeliveryTiming string                   `json:"delivery_timing,omitempty"`
	Connect        *metrics.ConnectSnapshot `json:"connect,omitempty"`
	Compliance     jsonTable                `json:"compliance"`
	Functions      []jsonFunction           `json:"functions"`
	Timeline       []jsonPoint              `json:"timeline,omitempty"`
	Shard          *jsonShard               `json:"shard,omitempty"`
	RemotePending  *delivery.Pending        `json:"remote_pending,omitempty"`
}

type jsonSessions struct {
	TargetPerHour         float64          `json:"target_per_hour"`
	AchievedPerHour       float64          `json:"achieved_per_hour"`
	PerUserHour           float64          `json:"per_user_hour"`
	EquivalentUsers       float64          `json:"equivalent_users"`
	Scheduled             int64            `json:"scheduled"`
	Expected              float64          `json:"expected"`
	ExpectedLow           int64            `json:"expected_low"`
	ExpectedHigh          int64            `json:"expected_high"`
	Started               int64            `json:"started"`
	LoggedIn              int64            `json:"logged_in"`
	Completed             int64            `json:"completed"`
	Failed                int64            `json:"failed"`
	Late                  int64            `json:"late"`
	Dropped               int64            `json:"dropped"`
	MaxDroppedPercent     float64          `json:"max_dropped_percent"`
	ByType                map[string]int64 `json:"by_type"`
	MaxConcurrentObserved int              `json:"max_concurrent_observed"`
	// The population, the drops by cause and the concurrency behind them
	// (report/load.go); absent in reports before them.
	Users              int     `json:"users"`
	UsersFigure        bool    `json:"users_figure"`
	PerUser            float64 `json:"sessions_per_user"`
	DroppedAtCap       int64   `json:"dropped_at_cap"`
	DroppedUsersBusy   int64   `json:"dropped_users_busy"`
	DropsBy            string  `json:"drops_by"`
	MaxConcurrent      int     `json:"max_concurrent_sessions"`
	PlannedSessionUS   int64   `json:"planned_session_us"`
	PlannedConcurrency float64 `json:"planned_concurrency"`
	MeanSessionUS      int64   `json:"mean_session_us"`
	MeanConcurrency    float64 `json:"mean_concurrency"`
	AchievedBandLow    float64 `json:"achieved_band_low_per_hour"`
	AchievedBandHigh   float64 `json:"achieved_band_high_per_hour"`
}

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

func generatorToJSON(g *GeneratorHealth, reasons []string) (*jsonGenerator, error) {
	if g == nil {
		return nil, nil
	}
	j := &jsonGenerator{Reasons: reasons, LateToleranceUS: us(g.LateTolerance), CPUKnown: g.CPUKnown,
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
	return j, nil
}

func generatorFromJSON(j *jsonGenerator) (*GeneratorHealth, error) {
	if j == nil {
		return nil, nil
	}
	g := &GeneratorHealth{LateTolerance: fromUS(j.LateToleranceUS), CPUKnown: j.CPUKnown, CPU: fromUS(j.CPUUS),
		CPUWindow: fromUS(j.CPUWindowUS), Cores: j.Cores, GCPause: fromUS(j.GCPauseUS), GCCycles: j.GCCycles,
		Stalls: j.Stalls, StallLimit: fromUS(j.StallLimitUS), WorstStall: fromUS(j.WorstStallUS)}
	var err error
	if j.SessionLateness != nil {
		if g.SessionLateness, err = metrics.DecodeHistogram(j.SessionLateness.Histogram); err != nil {
			return nil, fmt.Errorf("session lateness: %w", err)
		}
	}
	if j.InboundLateness != nil {
		if g.InboundLateness, err = metrics.DecodeHistogram(j.InboundLateness.Histogram); err != nil {
			return nil, fmt.Errorf("inbound lateness: %w", err)
		}
	}
	return g, nil
}

type jsonSink struct {
	Messages            int64            `json:"messages"`
	Recipients          int64            `json:"recipients"`
	Bytes               int64            `json:"bytes"`
	RelayDelayP50US     int64            `json:"relay_delay_p50_us"`
	RelayDelayP95US     int64            `json:"relay_delay_p95_us"`
	RelayDelayMaxUS     int64            `json:"relay_delay_max_us"`
	RelayDelayHistogram string           `json:"relay_delay_histogram,omitempty"`
	Foreign             int64            `json:"foreign,omitempty"`
	ForeignRuns         map[string]int64 `json:"foreign_runs,omitempty"`
}

type jsonTable struct {
	Compliant   bool         `json:"compliant"`
	Failing     []string     `json:"failing"`
	NotMeasured []string     `json:"not_measured,omitempty"`
	Rows        []jsonRow    `json:"rows"`
	ErrorRate   jsonErrorRow `json:"error_rate"`
}

type jsonRow struct {
	Function         string           `json:"function"`
	LimitUS          int64            `json:"limit_us"`
	RequiredPercent  float64          `json:"required_percent"`
	Operations       int64            `json:"operations"`
	WithinLimit      int64            `json:"within_limit"`
	Errors           int64            `json:"errors"`
	ErrorsByClass    map[string]int64 `json:"errors_by_class,omitempty"`
	Cancelled        int64            `json:"cancelled,omitempty"`
	PercentCompliant float64          `json:"percent_compliant"`
	P50US            int64            `json:"p50_us"`
	P95US            int64            `json:"p95_us"`
	P99US            int64            `json:"p99_us"`
	MaxUS            int64            `json:"max_us"`
	Pass             bool             `json:"pass"`
	Reason           string           `json:"reason,omitempty"`
	NotMeasured      bool             `json:"not_measured,omitempty"`
}

type jsonErrorRow struct {
	Operations int64   `json:"operations"`
	Errors     int64   `json:"errors"`
	Cancelled  int64   `json:"cancelled,omitempty"`
	Percent    float64 `json:"percent"`
	MaxPercent float64 `json:"max_percent"`
	Pass       bool    `json:"pass"`
	Reason     string  `json:"reason,omitempty"`
}

type jsonFunction struct {
	Function    string           `json:"function"`
	LimitUS     int64            `json:"limit_us"`
	Operations  int64            `json:"operations"`
	WithinLimit int64            `json:"within_limit"`
	Errors      map[string]int64 `json:"errors"`
	Cancelled   int64            `json:"cancelled,omitempty"`
	Histogram   string           `json:"histogram"`
}

func us(d time.Duration) int64     { return int64(d / time.Microsecond) }
func fromUS(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

func fmtJSONTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseJSONTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// functionOrder sorts functions as the SPEC table does, then by name.
func functionOrder(a, b measure.Function) int {
	ia, ib := slices.Index(measure.AllFunctions, a), slices.Index(measure.AllFunctions, b)
	switch {
	case ia >= 0 && ib >= 0:
		return ia - ib
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return strings.Compare(string(a), string(b))
}

// WriteJSON writes r as one indented JSON document of schema version
// SchemaVersion (docs/report-schema.md). Durations are truncated to whole
// microseconds. Histograms are written in the HdrHistogram V2 compressed
// base64 encoding. The output is deterministic for a given r.
func WriteJSON(w io.Writer, r *Run) error {
	j := jsonRun{
		SchemaVersion: SchemaVersion,
		Tool:          r.Tool, Version: r.Version, Config: r.Config, Name: r.Name, Seed: r.Seed,
		Started: fmtJSONTime(r.Started), Ended: fmtJSONTime(r.Ended),
		WarmupUS: us(r.Warmup), MeasurementUS: us(r.Measurement), RampdownUS: us(r.Rampdown),
		Partial: r.Partial, PartialReason: r.PartialReason,
		Target: r.Target,
		Sessions: jsonSessions{
			TargetPerHour: r.TargetSessionsPerHour, AchievedPerHour: r.AchievedSessionsPerHour,
			PerUserHour: r.SessionsPerUserHour, EquivalentUsers: r.EquivalentUsers,
			Scheduled: r.SessionsScheduled, LoggedIn: r.SessionsLoggedIn,
			Started: r.SessionsStarted, Completed: r.SessionsCompleted, Failed: r.SessionsFailed,
			Late: r.SessionsLate, Dropped: r.SessionsDropped, MaxDroppedPercent: r.MaxDroppedPercent, ByType: r.SessionsByType,
			MaxConcurrentObserved: r.MaxConcurrentObserved,
			Users:                 r.Users, PerUser: r.SessionsPerUser(),
			DroppedAtCap: r.SessionsDroppedAtCap, DroppedUsersBusy: r.SessionsDroppedUsersBusy, DropsBy: string(r.DropsBy()),
			MaxConcurrent: r.MaxConcurrentSessions, PlannedSessionUS: us(r.PlannedSessionDuration),
			PlannedConcurrency: r.PlannedConcurrency, MeanSessionUS: us(r.MeanSessionDuration), MeanConcurrency: r.ObservedConcurrency(),
		},
		Sink: jsonSink{
			Messages: r.Sink.Messages, Recipients: r.Sink.Recipients, Bytes: r.Sink.Bytes,
			RelayDelayP50US: us(r.Sink.RelayDelayP50), RelayDelayP95US: us(r.Sink.RelayDelayP95),
			RelayDelayMaxUS: us(r.Sink.RelayDelayMax),
			Foreign:         r.Sink.Foreign, ForeignRuns: r.Sink.ForeignRuns,
		},
		CouldNotRun: r.CouldNotRun,
		Inbound:     r.Inbound,
		Warnings:    r.Warnings, Delivery: r.Delivery, DeliveryChecks: r.DeliveryChecks, Clients: r.Clients, Connect: r.Connect,
		ServerClock: r.ServerClock, DeliveryTiming: r.DeliveryTiming,
		Timeline: timelineToJSON(r.Timeline), Shard: shardToJSON(r.Shard), RemotePending: r.RemotePending,
		Compliance: jsonTable{
			Compliant: r.Table.Compliant, Failing: r.Table.Failing, NotMeasured: r.Table.NotMeasured,
			ErrorRate: jsonErrorRow{
				Operations: r.Table.Errors.Operations, Errors: r.Table.Errors.Errors, Cancelled: r.Table.Errors.Cancelled,
				Percent: r.Table.Errors.Percent, MaxPercent: r.Table.Errors.MaxPercent,
				Pass: r.Table.Errors.Pass, Reason: r.Table.Errors.Reason,
			},
		},
	}
	j.Sessions.Expected, j.Sessions.ExpectedLow, j.Sessions.ExpectedHigh = r.ExpectedSessions()
	j.Sessions.AchievedBandLow, j.Sessions.AchievedBandHigh = r.AchievedBand()
	_, j.Sessions.UsersFigure = r.UsersFigure()
	gen, err := generatorToJSON(r.Generator, r.GeneratorBound())
	if err != nil {
		return fmt.Errorf("write report: generator: %w", err)
	}
	j.Generator = gen
	if j.Sessions.ByType == nil {
		j.Sessions.ByType = map[string]int64{}
	}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	if j.Compliance.Failing == nil {
		j.Compliance.Failing = []string{}
	}
	if r.Sink.RelayDelay != nil {
		enc, err := metrics.EncodeHistogram(r.Sink.RelayDelay)
		if err != nil {
			return fmt.Errorf("write report: sink: %w", err)
		}
		j.Sink.RelayDelayHistogram = enc
	}
	j.Compliance.Rows = make([]jsonRow, 0, len(r.Table.Rows))
	for _, row := range r.Table.Rows {
		jr := jsonRow{
			Function: string(row.Function), LimitUS: us(row.Limit), RequiredPercent: row.RequiredPercent,
			Operations: row.Operations, WithinLimit: row.WithinLimit, Errors: row.Errors, Cancelled: row.Cancelled,
			PercentCompliant: row.PercentCompliant,
			P50US:            us(row.P50), P95US: us(row.P95), P99US: us(row.P99), MaxUS: us(row.Max),
			Pass: row.Pass, Reason: row.Reason, NotMeasured: row.NotMeasured,
		}
		if row.ErrorsByClass != nil {
			jr.ErrorsByClass = make(map[string]int64, len(row.ErrorsByClass))
			for k, v := range row.ErrorsByClass {
				jr.ErrorsByClass[string(k)] = v
			}
		}
		j.Compliance.Rows = append(j.Compliance.Rows, jr)
	}
	funcs := make([]measure.Function, 0, len(r.Functions))
	for f := range r.Functions {
		funcs = append(funcs, f)
	}
	slices.SortFunc(funcs, functionOrder)
	j.Functions = make([]jsonFunction, 0, len(funcs))
	for _, f := range funcs {
		fs := r.Functions[f]
		if fs == nil {
			continue
		}
		h := fs.Histogram
		if h == nil {
			h = metrics.NewHistogram()
		}
		enc, err := metrics.EncodeHistogram(h)
		if err != nil {
			return fmt.Errorf("write report: %q: %w", f, err)
		}
		jf := jsonFunction{
			Function: string(f), LimitUS: us(fs.Limit), Operations: fs.Operations,
			WithinLimit: fs.WithinLimit, Errors: make(map[string]int64, len(fs.Errors)), Cancelled: fs.Cancelled, Histogram: enc,
		}
		for k, v := range fs.Errors {
			jf.Errors[string(k)] = v
		}
		j.Functions = append(j.Functions, jf)
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// ReadJSON reads a report written by WriteJSON. It is meant for files from
// other machines: it reads at most MaxJSONSize bytes, rejects unknown fields,
// other schema versions, trailing data, duplicated functions and
// inconsistent function stats (metrics.FunctionStats.Check), and decodes
// every histogram (of mailbench's geometry only), so the result can be
// merged exactly. The compliance table is read as stored; Merge
// re-evaluates it. Empty collections are read back as nil.
func ReadJSON(rd io.Reader) (*Run, error) {
	data, err := io.ReadAll(io.LimitReader(rd, MaxJSONSize+1))
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if len(data) > MaxJSONSize {
		return nil, fmt.Errorf("read report: larger than %d bytes", MaxJSONSize)
	}
	var version struct {
		SchemaVersion int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &version); err != nil {
		return nil, fmt.Errorf("read report: not a JSON document: %w", err)
	}
	if version.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("read report: schema_version %d, want %d", version.SchemaVersion, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j jsonRun
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return nil, errors.New("read report: trailing data after the report")
	}

	r := &Run{
		Tool: j.Tool, Version: j.Version, Config: j.Config, Name: j.Name, Seed: j.Seed,
		Warmup: fromUS(j.WarmupUS), Measurement: fromUS(j.MeasurementUS), Rampdown: fromUS(j.RampdownUS),
		Partial: j.Partial, PartialReason: j.PartialReason,
		Target:                   j.Target,
		TargetSessionsPerHour:    j.Sessions.TargetPerHour,
		AchievedSessionsPerHour:  j.Sessions.AchievedPerHour,
		SessionsPerUserHour:      j.Sessions.PerUserHour,
		EquivalentUsers:          j.Sessions.EquivalentUsers,
		SessionsScheduled:        j.Sessions.Scheduled,
		SessionsLoggedIn:         j.Sessions.LoggedIn,
		CouldNotRun:              j.CouldNotRun,
		Inbound:                  j.Inbound,
		SessionsStarted:          j.Sessions.Started,
		SessionsCompleted:        j.Sessions.Completed,
		SessionsFailed:           j.Sessions.Failed,
		SessionsLate:             j.Sessions.Late,
		SessionsDropped:          j.Sessions.Dropped,
		MaxDroppedPercent:        j.Sessions.MaxDroppedPercent,
		MaxConcurrentObserved:    j.Sessions.MaxConcurrentObserved,
		SessionsDroppedAtCap:     j.Sessions.DroppedAtCap,
		SessionsDroppedUsersBusy: j.Sessions.DroppedUsersBusy,
		MaxConcurrentSessions:    j.Sessions.MaxConcurrent,
		Users:                    j.Sessions.Users,
		PlannedSessionDuration:   fromUS(j.Sessions.PlannedSessionUS),
		PlannedConcurrency:       j.Sessions.PlannedConcurrency,
		MeanSessionDuration:      fromUS(j.Sessions.MeanSessionUS),
		Sink: SinkSummary{
			Messages: j.Sink.Messages, Recipients: j.Sink.Recipients, Bytes: j.Sink.Bytes,
			RelayDelayP50: fromUS(j.Sink.RelayDelayP50US), RelayDelayP95: fromUS(j.Sink.RelayDelayP95US),
			RelayDelayMax: fromUS(j.Sink.RelayDelayMaxUS), Foreign: j.Sink.Foreign, ForeignRuns: j.Sink.ForeignRuns,
		},
	}
	if r.Started, err = parseJSONTime(j.Started); err != nil {
		return nil, fmt.Errorf("read report: started: %w", err)
	}
	if r.Ended, err = parseJSONTime(j.Ended); err != nil {
		return nil, fmt.Errorf("read report: ended: %w", err)
	}
	if len(j.Sessions.ByType) > 0 {
		r.SessionsByType = j.Sessions.ByType
	}
	if len(j.Warnings) > 0 {
		r.Warnings = j.Warnings
	}
	r.Delivery, r.DeliveryChecks, r.Clients, r.Connect = j.Delivery, j.DeliveryChecks, j.Clients, j.Connect
	r.ServerClock, r.DeliveryTiming = j.ServerClock, j.DeliveryTiming
	r.RemotePending = j.RemotePending
	if r.Shard, err = shardFromJSON(j.Shard); err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if r.Generator, err = generatorFromJSON(j.Generator); err != nil {
		return nil, fmt.Errorf("read report: generator: %w", err)
	}
	if r.Timeline, err = timelineFromJSON(j.Timeline); err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if j.Sink.RelayDelayHistogram != "" {
		if r.Sink.RelayDelay, err = metrics.DecodeHistogram(j.Sink.RelayDelayHistogram); err != nil {
			return nil, fmt.Errorf("read report: sink: %w", err)
		}
	}

	t := &r.Table
	t.Compliant = j.Compliance.Compliant
	if len(j.Compliance.Failing) > 0 {
		t.Failing = j.Compliance.Failing
	}
	if len(j.Compliance.NotMeasured) > 0 {
		t.NotMeasured = j.Compliance.NotMeasured
	}
	e := j.Compliance.ErrorRate
	t.Errors = compliance.ErrorRow{Operations: e.Operations, Errors: e.Errors, Cancelled: e.Cancelled, Percent: e.Percent,
		MaxPercent: e.MaxPercent, Pass: e.Pass, Reason: e.Reason}
	for _, jr := range j.Compliance.Rows {
		row := compliance.Row{
			Function: measure.Function(jr.Function), Limit: fromUS(jr.LimitUS), RequiredPercent: jr.RequiredPercent,
			Operations: jr.Operations, WithinLimit: jr.WithinLimit, Errors: jr.Errors, Cancelled: jr.Cancelled,
			PercentCompliant: jr.PercentCompliant,
			P50:              fromUS(jr.P50US), P95: fromUS(jr.P95US), P99: fromUS(jr.P99US), Max: fromUS(jr.MaxUS),
			Pass: jr.Pass, Reason: jr.Reason, NotMeasured: jr.NotMeasured,
		}
		if len(jr.ErrorsByClass) > 0 {
			row.ErrorsByClass = make(map[measure.ErrorClass]int64, len(jr.ErrorsByClass))
			for k, v := range jr.ErrorsByClass {
				row.ErrorsByClass[measure.ErrorClass(k)] = v
			}
		}
		t.Rows = append(t.Rows, row)
	}

	if len(j.Functions) > 0 {
		r.Functions = make(map[measure.Function]*metrics.FunctionStats, len(j.Functions))
	}
	for _, jf := range j.Functions {
		f := measure.Function(jf.Function)
		if _, dup := r.Functions[f]; dup {
			return nil, fmt.Errorf("read report: function %q appears twice", f)
		}
		h, err := metrics.DecodeHistogram(jf.Histogram)
		if err != nil {
			return nil, fmt.Errorf("read report: %q: %w", f, err)
		}
		fs := &metrics.FunctionStats{
			Function: f, Limit: fromUS(jf.LimitUS), Operations: jf.Operations, WithinLimit: jf.WithinLimit,
			Errors: make(map[measure.ErrorClass]int64, len(jf.Errors)), Histogram: h, Cancelled: jf.Cancelled,
		}
		for k, v := range jf.Errors {
			fs.Errors[measure.ErrorClass(k)] = v
		}
		if err := fs.Check(); err != nil {
			return nil, fmt.Errorf("read report: %w", err)
		}
		r.Functions[f] = fs
	}
	return r, nil
}

// ReadStrictJSON decodes one JSON document of at most MaxJSONSize bytes
// from rd into v; unknown fields are errors. what names the document in
// errors ("read what: ..."). The summaries that embed run reports
// (certify, size) read themselves through it. It performs I/O only on rd.
func ReadStrictJSON(rd io.Reader, what string, v any) error {
	data, err := io.ReadAll(io.LimitReader(rd, MaxJSONSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	if len(data) > MaxJSONSize {
		return fmt.Errorf("read %s: larger than %d bytes", what, MaxJSONSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// EmbeddedJSON is r's JSON report (WriteJSON, without the trailing line
// break) to embed in a larger document (sweep, certify, size), or null for
// a nil r.
func EmbeddedJSON(r *Run) (json.RawMessage, error) {
	if r == nil {
		return json.RawMessage("null"), nil
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// WriteIndentedJSON writes v as indented JSON: the one layout of the
// documents that embed runs (sweep, certify, size).
func WriteIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// CheckSchema returns an error naming what was read unless its schema and
// version are the wanted ones. It doesn't perform I/O.
func CheckSchema(what, schema string, version int, wantSchema string, wantVersion int) error {
	if schema != wantSchema || version != wantVersion {
		return fmt.Errorf("read %s: schema %q version %d, want %q version %d", what, schema, version, wantSchema, wantVersion)
	}
	return nil
}
