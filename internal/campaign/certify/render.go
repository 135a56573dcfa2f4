package certify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/sweep"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
)

// Schema and SchemaVersion identify the JSON written by WriteJSON
// (docs/run-rules.md).
const (
	Schema        = "mailbench-certify"
	SchemaVersion = 1
)

// VerdictLine is "CERTIFIABLE" or "NOT CERTIFIABLE: broken rules: ...".
func (r *Result) VerdictLine() string {
	if r.Certifiable() {
		return "CERTIFIABLE: every run rule was met"
	}
	return "NOT CERTIFIABLE: broken rules: " + strings.Join(r.Broken(), "; ")
}

// WriteText renders r: the verdict, the median iteration, a table with a
// column per run, every rule with its outcome, the disclosure, and the
// median iteration's whole report (render.WriteText). It performs I/O only
// on w.
func (r *Result) WriteText(w io.Writer) error {
	target := "server under test"
	if r.Embedded {
		target = "embedded target"
	}
	t := &render.SideBySide{Title: []string{
		fmt.Sprintf("Certification: %q (%s), 100%% = %s sessions/hour ≡ %s users", r.Name, target,
			report.FormatFloat(r.BaseRate, 0), report.FormatCount(int64(math.Floor(r.users(r.BaseRate))))),
		"",
		r.VerdictLine(),
	}}
	if r.Partial {
		t.Title = append(t.Title, fmt.Sprintf("*** PARTIAL: %s ***", r.PartialReason))
	}
	if r.Median >= 0 {
		m := r.Runs[r.Median]
		t.Title = append(t.Title, fmt.Sprintf("Median iteration at 100%%: run %d (iteration %d): %s sessions/hour ≡ %s users, %s",
			r.Median+1, m.Iteration, report.FormatFloat(m.Run.AchievedSessionsPerHour, 0),
			report.FormatCount(int64(math.Floor(m.Run.EquivalentUsers))), m.Verdict()))
	} else {
		t.Title = append(t.Title, "Median iteration at 100%: none (no iteration produced a report)")
	}
	for _, rr := range r.Runs {
		h := report.FormatFloat(rr.Level, 0) + "%"
		if rr.Level == IterationsLevel {
			h += fmt.Sprintf(" #%d", rr.Iteration)
		}
		t.Head = append(t.Head, h)
	}
	cell := func(label string, f func(rr RunResult) string) {
		t.Add(label, func(i int) string {
			if r.Runs[i].Run == nil {
				return "-"
			}
			return f(r.Runs[i])
		})
	}
	t.Add("target sessions/hour", func(i int) string { return report.FormatFloat(r.Runs[i].Rate, 0) })
	cell("achieved sessions/hour", func(rr RunResult) string { return report.FormatFloat(rr.Run.AchievedSessionsPerHour, 0) })
	cell("equivalent users", func(rr RunResult) string {
		return report.FormatCount(int64(math.Floor(rr.Run.EquivalentUsers)))
	})
	cell("late / dropped sessions", func(rr RunResult) string {
		return report.FormatCount(rr.Run.SessionsLate) + " / " + report.FormatCount(rr.Run.SessionsDropped)
	})
	cell("worst row % compliant", func(rr RunResult) string {
		row, ok := rr.Run.WorstRow()
		if !ok {
			return "-"
		}
		return report.FloorPercent(row.PercentCompliant) + "% (" + string(row.Function) + ")"
	})
	cell("error rate", func(rr RunResult) string { return report.CeilPercent(rr.Run.Table.Errors.Percent) + "%" })
	t.Add("schedule seed", func(i int) string { return fmt.Sprint(r.Runs[i].Seed) })
	t.Add("mailboxes", func(i int) string {
		if r.Runs[i].PrepareOK {
			return "ok"
		}
		if r.Runs[i].Prepared == "" {
			return "-"
		}
		return "NOT VERIFIED"
	})
	cell("generator", func(rr RunResult) string {
		if rr.GeneratorBound {
			return "GENERATOR-BOUND"
		}
		return "ok"
	})
	t.Add("verdict", func(i int) string { return string(r.Runs[i].Verdict()) })

	rules := []string{"Run rules (docs/run-rules.md):"}
	for _, c := range r.Checks {
		v := "PASS"
		if !c.Pass {
			v = "FAIL"
		}
		rules = append(rules, fmt.Sprintf("  %s  %s: %s", v, c.Rule, c.Detail))
	}
	if r.RulesModified {
		rules = append(rules, fmt.Sprintf("  FAIL  the documented rules: this run used modified ones (warm-up ≥ %v, measurement ≥ %v, %g sessions/user-hour, %d iterations)",
			r.Rules.MinWarmup, r.Rules.MinMeasurement, r.Rules.PerUserHour, r.Rules.Iterations))
	}
	t.Sections = append(t.Sections,
		[]string{"The 120% run characterises only: it need not pass. Seeds: sweep.DeriveSeed(seed, run number)."},
		rules, r.Disclosure.lines())
	for i, rr := range r.Runs {
		if rr.Err != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("note: run %d could not be carried out: %s", i+1, rr.Err))
		}
	}
	if err := t.Write(w); err != nil {
		return err
	}
	if r.Median >= 0 {
		if _, err := fmt.Fprintf(w, "\n=== The median iteration (run %d) in full ===\n\n", r.Median+1); err != nil {
			return err
		}
		return render.WriteText(w, r.Runs[r.Median].Run)
	}
	return nil
}

func (r *Result) users(rate float64) float64 {
	if r.PerUserHour <= 0 {
		return 0
	}
	return rate / r.PerUserHour
}

// lines renders the disclosure section.
func (d Disclosure) lines() []string {
	m := d.Machine
	out := []string{
		"Disclosure:",
		"  mailbench version: " + orDash(d.MailbenchVersion),
		"  workload file: " + orDash(d.ConfigFile),
		"  config sha256 (canonical form): " + orDash(d.ConfigHash),
		"  IMAP greeting: " + orDash(d.Banners.IMAPGreeting),
		"  IMAP capabilities: " + orDash(strings.Join(d.Banners.IMAPCapabilities, " ")),
		"  SMTP banner: " + orDash(d.Banners.SMTPBanner),
	}
	if d.Banners.Error != "" {
		out = append(out, "  banners not recorded: "+d.Banners.Error)
	}
	mem := "-"
	if m.MemoryBytes > 0 {
		mem = report.FormatFloat(float64(m.MemoryBytes)/(1<<30), 1) + " GiB"
	}
	out = append(out,
		"  generator machine: "+orDash(m.CPUModel)+fmt.Sprintf(", %d logical CPUs, ", m.Cores)+mem+" memory",
		"  generator OS: "+orDash(m.Kernel)+" ("+m.OS+"/"+m.Arch+"), "+orDash(m.GoVersion)+", host "+orDash(m.Hostname),
	)
	if len(d.System) == 0 {
		out = append(out, "  system under test: - (no [disclosure] in the config)")
	}
	for _, kv := range d.System {
		v := strings.ReplaceAll(strings.TrimRight(kv[1], "\n"), "\n", "\n      ")
		out = append(out, "  "+kv[0]+": "+v)
	}
	return out
}

type jsonResult struct {
	campaign.Envelope
	BaseRate      float64        `json:"base_sessions_per_hour"`
	PerUserHour   float64        `json:"sessions_per_user_hour"`
	Rules         jsonRules      `json:"rules"`
	Certifiable   bool           `json:"certifiable"`
	Broken        []string       `json:"broken"`
	Checks        []jsonCheck    `json:"checks"`
	Median        *int           `json:"median_run"` // 0-based index into runs; null: none
	Partial       bool           `json:"partial"`
	PartialReason string         `json:"partial_reason"`
	Runs          []jsonRun      `json:"runs"`
	Disclosure    jsonDisclosure `json:"disclosure"`
}

type jsonRules struct {
	MinWarmupS      float64 `json:"min_warmup_s"`
	MinMeasurementS float64 `json:"min_measurement_s"`
	PerUserHour     float64 `json:"sessions_per_user_hour"`
	Iterations      int     `json:"iterations"`
	Modified        bool    `json:"modified"`
}

type jsonCheck struct {
	Rule   string `json:"rule"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

type jsonRun struct {
	Level          float64         `json:"level_percent"`
	Iteration      int             `json:"iteration"`
	Rate           float64         `json:"target_per_hour"`
	Seed           int64           `json:"seed"`
	Prepared       string          `json:"mailboxes"`
	PrepareOK      bool            `json:"mailboxes_ok"`
	Verdict        sweep.Verdict   `json:"verdict"`
	Error          string          `json:"error,omitempty"`
	GeneratorBound bool            `json:"generator_bound"`
	GeneratorWhy   string          `json:"generator_why,omitempty"`
	Report         json.RawMessage `json:"report"`
}

type jsonDisclosure struct {
	MailbenchVersion string      `json:"mailbench_version"`
	ConfigFile       string      `json:"config_file"`
	ConfigHash       string      `json:"config_sha256"`
	Banners          jsonBanners `json:"banners"`
	Machine          jsonMachine `json:"machine"`
	System           [][2]string `json:"system"`
}

type jsonBanners struct {
	IMAPGreeting     string   `json:"imap_greeting"`
	IMAPCapabilities []string `json:"imap_capabilities"`
	SMTPBanner       string   `json:"smtp_banner"`
	Error            string   `json:"error,omitempty"`
}

type jsonMachine struct {
	CPUModel    string `json:"cpu_model"`
	Cores       int    `json:"logical_cpus"`
	MemoryBytes int64  `json:"memory_bytes"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	GoVersion   string `json:"go_version"`
	Hostname    string `json:"hostname"`
}

// WriteJSON writes r as one JSON document (docs/run-rules.md): verdict,
// checks, every run with its whole report (report.WriteJSON form) and the
// disclosure. It performs I/O only on w.
func (r *Result) WriteJSON(w io.Writer) error {
	d, m := r.Disclosure, r.Disclosure.Machine
	j := jsonResult{
		Envelope: campaign.Envelope{Schema: Schema, SchemaVersion: SchemaVersion, Name: r.Name, Config: r.Config, Embedded: r.Embedded},
		BaseRate: r.BaseRate, PerUserHour: r.PerUserHour,
		Rules: jsonRules{MinWarmupS: r.Rules.MinWarmup.Seconds(), MinMeasurementS: r.Rules.MinMeasurement.Seconds(),
			PerUserHour: r.Rules.PerUserHour, Iterations: r.Rules.Iterations, Modified: r.RulesModified},
		Certifiable: r.Certifiable(), Broken: append([]string{}, r.Broken()...), Checks: []jsonCheck{},
		Partial: r.Partial, PartialReason: r.PartialReason, Runs: []jsonRun{},
		Disclosure: jsonDisclosure{
			MailbenchVersion: d.MailbenchVersion, ConfigFile: d.ConfigFile, ConfigHash: d.ConfigHash,
			Banners: jsonBanners{IMAPGreeting: d.Banners.IMAPGreeting, IMAPCapabilities: append([]string{}, d.Banners.IMAPCapabilities...),
				SMTPBanner: d.Banners.SMTPBanner, Error: d.Banners.Error},
			Machine: jsonMachine{CPUModel: m.CPUModel, Cores: m.Cores, MemoryBytes: m.MemoryBytes, Kernel: m.Kernel,
				OS: m.OS, Arch: m.Arch, GoVersion: m.GoVersion, Hostname: m.Hostname},
			System: append([][2]string{}, d.System...),
		},
	}
	if r.Median >= 0 {
		md := r.Median
		j.Median = &md
	}
	for _, c := range r.Checks {
		j.Checks = append(j.Checks, jsonCheck(c))
	}
	for _, rr := range r.Runs {
		jr := jsonRun{Level: rr.Level, Iteration: rr.Iteration, Rate: rr.Rate, Seed: rr.Seed, Prepared: rr.Prepared,
			PrepareOK: rr.PrepareOK, Verdict: rr.Verdict(), Error: rr.Err, GeneratorBound: rr.GeneratorBound,
			GeneratorWhy: rr.GeneratorWhy}
		var err error
		if jr.Report, err = report.EmbeddedJSON(rr.Run); err != nil {
			return err
		}
		j.Runs = append(j.Runs, jr)
	}
	return report.WriteIndentedJSON(w, j)
}

// ReadJSON reads a document written by WriteJSON (at most
// report.MaxJSONSize bytes; unknown fields are errors), every run's report
// through report.ReadJSON. The checks are read as stored, not re-evaluated.
// It performs I/O only on rd.
func ReadJSON(rd io.Reader) (*Result, error) {
	var j jsonResult
	if err := report.ReadStrictJSON(rd, "certify result", &j); err != nil {
		return nil, err
	}
	if err := report.CheckSchema("certify result", j.Schema, j.SchemaVersion, Schema, SchemaVersion); err != nil {
		return nil, err
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	d, m := j.Disclosure, j.Disclosure.Machine
	r := &Result{
		Name: j.Name, Config: j.Config, Embedded: j.Embedded, BaseRate: j.BaseRate, PerUserHour: j.PerUserHour,
		Rules:         Rules{MinWarmup: sec(j.Rules.MinWarmupS), MinMeasurement: sec(j.Rules.MinMeasurementS), PerUserHour: j.Rules.PerUserHour, Iterations: j.Rules.Iterations},
		RulesModified: j.Rules.Modified, Median: -1, Partial: j.Partial, PartialReason: j.PartialReason,
		Disclosure: Disclosure{MailbenchVersion: d.MailbenchVersion, ConfigFile: d.ConfigFile, ConfigHash: d.ConfigHash,
			Banners: Banners{IMAPGreeting: d.Banners.IMAPGreeting, IMAPCapabilities: d.Banners.IMAPCapabilities, SMTPBanner: d.Banners.SMTPBanner, Error: d.Banners.Error},
			Machine: Machine{CPUModel: m.CPUModel, Cores: m.Cores, MemoryBytes: m.MemoryBytes, Kernel: m.Kernel, OS: m.OS, Arch: m.Arch, GoVersion: m.GoVersion, Hostname: m.Hostname},
			System:  d.System},
	}
	if len(r.Disclosure.Banners.IMAPCapabilities) == 0 {
		r.Disclosure.Banners.IMAPCapabilities = nil
	}
	if len(r.Disclosure.System) == 0 {
		r.Disclosure.System = nil
	}
	for _, c := range j.Checks {
		r.Checks = append(r.Checks, Check(c))
	}
	for i, jr := range j.Runs {
		rr := RunResult{Level: jr.Level, Iteration: jr.Iteration, Rate: jr.Rate, Seed: jr.Seed, Prepared: jr.Prepared,
			PrepareOK: jr.PrepareOK, Err: jr.Error, GeneratorBound: jr.GeneratorBound, GeneratorWhy: jr.GeneratorWhy}
		if s := strings.TrimSpace(string(jr.Report)); s != "" && s != "null" {
			run, err := report.ReadJSON(bytes.NewReader(jr.Report))
			if err != nil {
				return nil, fmt.Errorf("read certify result: run %d: %w", i+1, err)
			}
			rr.Run = run
		}
		r.Runs = append(r.Runs, rr)
	}
	if j.Median != nil {
		if *j.Median < 0 || *j.Median >= len(r.Runs) || r.Runs[*j.Median].Run == nil {
			return nil, errors.New("read certify result: median_run does not name a run with a report")
		}
		r.Median = *j.Median
	}
	return r, nil
}

// RunsAndLabels returns the runs that produced a report, labelled "80%",
// "100% #2", ..., for render.WriteHTML. It doesn't perform I/O.
func (res *Result) RunsAndLabels() ([]*report.Run, []string) {
	var runs []*report.Run
	var labels []string
	for _, rr := range res.Runs {
		if rr.Run == nil {
			continue
		}
		l := fmt.Sprintf("%g%%", rr.Level)
		if rr.Level == IterationsLevel {
			l += fmt.Sprintf(" #%d", rr.Iteration)
		}
		runs, labels = append(runs, rr.Run), append(labels, l)
	}
	return runs, labels
}

// Result is a campaign result (its command renders it like the others).
var _ campaign.Result = (*Result)(nil)
