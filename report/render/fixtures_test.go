package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// compliantRun is a full run where every row passes.
func compliantRun() *report.Run {
	rules := compliance.DefaultRules()
	s := metrics.NewStats(rules.Limits())
	for i, f := range fixtureFunctions {
		limit := 5 * time.Second
		if f == measure.DeliveryLocal || f == measure.DeliveryRemote {
			limit = time.Minute
		}
		observe(s, f, 500+37*i, i%3, i%2, measure.Timeout, time.Duration(20+i*15)*time.Millisecond, limit)
	}
	h := metrics.NewHistogram()
	for k := range 400 {
		metrics.RecordDuration(h, time.Duration(k+5)*time.Millisecond)
	}
	r := &report.Run{
		Tool: "mailbench", Version: "0.1.0", Config: "configs/enterprise.toml", Name: "enterprise-2500", Seed: 42,
		Started: t0, Ended: t0.Add(12*time.Minute + 30*time.Second),
		Warmup: report.Duration(time.Minute), Measurement: report.Duration(10 * time.Minute), Rampdown: report.Duration(90 * time.Second),
		Target:        report.Target{IMAP: "mail.example.test:993", SMTP: "mail.example.test:587", Sink: "10.0.0.5:2525"},
		SessionCounts: report.SessionCounts{TargetSessionsPerHour: 12000, AchievedSessionsPerHour: 12019.2, SessionsPerUserHour: 4.8, EquivalentUsers: 2500, Users: 2500, MaxConcurrentSessions: 1000, PlannedSessionDuration: report.Duration(10 * time.Second), PlannedConcurrency: 12000.0 / 3600 * 10, MeanSessionDuration: report.Duration(11 * time.Second), SessionsScheduled: 2003, SessionsStarted: 2003, SessionsLoggedIn: 1998, SessionsCompleted: 1990, SessionsFailed: 13, SessionsLate: 2, SessionsDropped: 0, SessionsByType: map[string]int64{"check": 701, "read": 501, "cleanup": 200, "folders": 200, "send": 401}, MaxConcurrentObserved: 37},

		Inbound: report.InboundSummary{TargetPerHour: 6000, Scheduled: 1011, Started: 1011, Late: 1},
		Generator: &report.GeneratorHealth{LateTolerance: time.Second, SessionLateness: latenessOf(2003, 300*time.Microsecond),
			InboundLateness: latenessOf(1011, 200*time.Microsecond), CPUKnown: true, CPU: 120 * time.Second,
			CPUWindow: 10 * time.Minute, Cores: 2, GCPause: 41 * time.Millisecond, GCCycles: 230},

		Sink: report.SinkSummary{Messages: 400, Recipients: 480, Bytes: 3355443,
			RelayDelayP50: report.Duration(time.Duration(h.ValueAtPercentile(50)) * time.Microsecond),
			RelayDelayP95: report.Duration(time.Duration(h.ValueAtPercentile(95)) * time.Microsecond),
			RelayDelayMax: report.Duration(time.Duration(h.Max()) * time.Microsecond), RelayDelay: report.Histogram{Histogram: h}},
		Functions: s.Snapshot(),
	}
	r.Evaluate(rules)
	return r
}

// failingRun is a partial run on the embedded target with a row at exactly
// 95.00%, a function that never ran, an error rate of exactly 1% and
// warnings; it has no sink.
func failingRun() *report.Run {
	rules := compliance.DefaultRules()
	rules.Functions = slices.DeleteFunc(rules.Functions, func(r compliance.Rule) bool {
		return r.Function == measure.DeliveryLocal || r.Function == measure.DeliveryRemote
	})
	s := metrics.NewStats(rules.Limits())
	for i, f := range measure.SPECFunctions {
		switch f {
		case measure.IMAPExpunge: // exactly 95.00% within: fails
			observe(s, f, 200, 10, 0, measure.OK, 10*time.Millisecond, 5*time.Second)
		case measure.IMAPLsub: // never ran
		case measure.SMTPData: // the errors: 1% overall in total
			observe(s, f, 1000, 0, 0, measure.OK, 5*time.Millisecond, 5*time.Second)
		default:
			observe(s, f, 100+i, 0, 0, measure.OK, 3*time.Millisecond, 5*time.Second)
		}
	}
	snap := s.Snapshot()
	var ops int64
	for _, fs := range snap {
		ops += fs.Operations
	}
	// Make the error rate exactly 1%: add failures (and their operations) so
	// that errors*100 == ops.
	total := ops
	for (total)%99 != 0 {
		s.Observe(measure.Observation{Function: measure.SMTPData, Duration: time.Millisecond})
		total++
	}
	fails := total / 99
	for range fails {
		s.Observe(measure.Observation{Function: measure.SMTPData, Duration: 2 * time.Second, Class: measure.Connection})
	}
	r := &report.Run{
		Tool: "mailbench", Version: "0.1.0", Name: "quick", Seed: 7,
		Started: t0, Ended: t0.Add(95 * time.Second),
		Warmup: report.Duration(10 * time.Second), Measurement: report.Duration(2 * time.Minute), Rampdown: report.Duration(10 * time.Second),
		Partial: true, PartialReason: "interrupted by SIGINT",
		Target:        report.Target{IMAP: "127.0.0.1:41143", SMTP: "127.0.0.1:41025", Embedded: true},
		SessionCounts: report.SessionCounts{TargetSessionsPerHour: 600, AchievedSessionsPerHour: 587.5, SessionsPerUserHour: 4.8, SessionsScheduled: 48, SessionsStarted: 47, SessionsLoggedIn: 41, SessionsCompleted: 40, SessionsFailed: 7, SessionsLate: 0, SessionsDropped: 1, SessionsDroppedAtCap: 1, MaxConcurrentSessions: 5, Users: 50, MaxConcurrentObserved: 5},

		Warnings:  []string{"TLS certificate verification disabled for IMAP", "measurement window shorter than configured"},
		Functions: s.Snapshot(),
	}
	r.Evaluate(rules)
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// fixtureFunctions are the functions the test runs time: the SPEC table
// and the two delivery times, as a run without [clients] has them.
var fixtureFunctions = append(append([]measure.Function(nil), measure.SPECFunctions...), measure.DeliveryLocal, measure.DeliveryRemote)

var tlStart = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// fnPoint is a function's operations in a point: ops durations spread
// evenly over (0, top], the first errs of them failed.
func fnPoint(f measure.Function, ops, errs int64, top time.Duration) metrics.FunctionPoint {
	h := metrics.NewHistogram()
	for k := int64(1); k <= ops; k++ {
		metrics.RecordDuration(h, top*time.Duration(k)/time.Duration(ops))
	}
	enc, err := metrics.EncodeHistogram(h)
	if err != nil {
		panic(err)
	}
	return metrics.FunctionPoint{Function: f, Totals: metrics.Totals{Operations: ops, Errors: errs}, Histogram: enc}
}

// mkPoint is a point of the given functions, its figures taken from their
// histograms as the recorder takes them.
func mkPoint(start time.Time, length time.Duration, sessions int64, fps ...metrics.FunctionPoint) metrics.Point {
	p, exact, err := metrics.MergePoints(metrics.Point{Start: start, Length: length, Sessions: sessions, Functions: fps})
	if err != nil || !exact {
		panic(fmt.Sprintf("mkPoint: exact %v, %v", exact, err))
	}
	return p
}

// sampleTimeline is n 10 s intervals whose load and p95 grow with i:
// IMAP Connect and SMTP Data, and local delivery times in every other
// interval.
func sampleTimeline(t testing.TB, n int) []metrics.Point {
	tl := make([]metrics.Point, n)
	for i := range tl {
		k := int64(i + 1)
		fps := []metrics.FunctionPoint{
			fnPoint(measure.SMTPData, 40*k, int64(i%3), 3*time.Millisecond),
			fnPoint(measure.IMAPConnect, 60*k, 0, time.Duration(k)*12*time.Millisecond),
		}
		if i%2 == 0 {
			fps = append(fps, fnPoint(measure.DeliveryLocal, 5, 0, time.Duration(k)*time.Second))
		}
		tl[i] = mkPoint(tlStart.Add(time.Duration(i)*10*time.Second), 10*time.Second, k, fps...)
	}
	return tl
}

func roundTrip(t *testing.T, r *report.Run) *report.Run {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	got, err := report.ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func serverFixture() *metrics.ServerReport {
	return &metrics.ServerReport{IntervalSeconds: 10, Cores: 2,
		Sources: []metrics.ServerSource{{Name: "host", Kind: "host", Samples: 60}, {Name: "queue", Kind: "command", Samples: 60, Failures: 3, LastError: "no answer within 2s ([server] timeout)"}},
		Figures: []metrics.ServerFigure{
			{Name: "host.cpu_percent", Unit: "%", Mean: 81.5, Peak: 97.2, Samples: 60},
			{Name: "host.disk_util_percent", Unit: "%", Mean: 22, Peak: 40, Samples: 60},
			{Name: "dovecot.cpu_cores", Unit: "cores", Mean: 1.1, Peak: 1.6, Samples: 60},
			{Name: "dovecot.rss_bytes", Unit: "bytes", Mean: 210 << 20, Peak: 230 << 20, Samples: 60},
			{Name: "mailbench.cpu_cores", Unit: "cores", Mean: 0.4, Peak: 0.5, Samples: 60},
		}}
}

// firstDifference shows the lines around the first line where got and
// want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n got  " + gl + "\n want " + wl
		}
	}
	return "(no line differs)"
}

// topLevelKeys are the top-level keys of a JSON report whose value is not
// empty (null, "", false, 0, [] or {}).
func topLevelKeys(t *testing.T, data []byte) []string {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, v := range doc {
		switch string(v) {
		case "null", `""`, "false", "0", "[]", "{}":
		default:
			keys = append(keys, k)
		}
	}
	return keys
}

// sameDocument reports whether two JSON documents have the same lines, but
// for numbers that agree to five significant digits.
func sameDocument(a, b []byte) bool {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if la[i] == lb[i] {
			continue
		}
		ka, va, oka := strings.Cut(la[i], ": ")
		kb, vb, okb := strings.Cut(lb[i], ": ")
		if !oka || !okb || ka != kb {
			return false
		}
		fa, erra := strconv.ParseFloat(strings.TrimSuffix(va, ","), 64)
		fb, errb := strconv.ParseFloat(strings.TrimSuffix(vb, ","), 64)
		if erra != nil || errb != nil || math.Abs(fa-fb) > 1e-5*math.Max(math.Abs(fa), math.Abs(fb)) {
			return false
		}
	}
	return true
}

// observe feeds s reproducible observations: for function index i, n
// operations with durations spread over 1..spread ms, of which slow exceed
// the limit and failed end in the given class.
func observe(s *metrics.Stats, f measure.Function, n, slow, failed int, class measure.ErrorClass, spread time.Duration, limit time.Duration) {
	for k := range n {
		o := measure.Observation{Function: f, Start: t0, Duration: time.Duration(k%1000+1) * spread / 1000}
		switch {
		case k < slow:
			o.Duration = limit + time.Duration(k+1)*time.Millisecond
		case k < slow+failed:
			o.Class = class
		}
		s.Observe(o)
	}
}

// latenessOf is a lateness histogram of n starts, all d late.
func latenessOf(n int64, d time.Duration) *hdrhistogram.Histogram {
	h := metrics.NewHistogram()
	h.RecordValues(int64(d/time.Microsecond), n)
	return h
}
