package render

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

// ChartLibrary names the charting library embedded in every HTML report
// (report/render/assets; origin and licence in docs/html-report.md).
const ChartLibrary = "Chart.js 4.6.1"

//go:embed assets/chart.umd.min.js
var chartJS string

// chartLibrarySource is the embedded library without its trailing
// sourceMappingURL comment (the map is not shipped: a browser's developer
// tools would try to load it next to the HTML file).
var chartLibrarySource = func() string {
	s := strings.TrimRight(chartJS, "\n")
	if i := strings.LastIndex(s, "\n//# sourceMappingURL="); i >= 0 {
		s = s[:i]
	}
	return s + "\n"
}()

// HTMLOptions configure WriteHTML.
type HTMLOptions struct {
	// Title is the page's title; "" derives one from the runs.
	Title string
	// Labels name the runs (one per run, as in WriteSideBySide); nil or an
	// empty label uses the run's name, else its position.
	Labels []string
}

// WriteHTML renders runs as one self-contained HTML page: the charting
// library (ChartLibrary), the styles and the data are inline, so the file
// opens without network access. One run gives its report: header and
// verdict, warnings, the compliance table, the load figures, the connect
// breakdown and delivery accounting, and charts of p95 per function over
// time, sessions and operations per interval, each function's latency
// percentiles (from its HDR histogram), sessions by type, the connect
// breakdown and the delivery accounting. Several runs (servers, releases,
// load levels) get a comparison table and charts of p95 per function and
// of sessions/hour per run first, then each run's report.
//
// The page uses only what a JSON report holds, so a Run read back by
// ReadJSON renders the same page as the Run that was written. User input
// (names, configs, warnings) is escaped by html/template; the chart data is
// a JSON block. Every table is plain HTML and readable without
// JavaScript. The output is deterministic for given runs and options. It
// performs I/O only on w.
func WriteHTML(w io.Writer, runs []*report.Run, opts HTMLOptions) error {
	return writeHTML(w, runs, opts, chartLibrarySource)
}

// writeHTML is WriteHTML with the library source given, so that golden
// files need not hold a copy of the library.
func writeHTML(w io.Writer, runs []*report.Run, opts HTMLOptions, library string) error {
	if len(runs) == 0 {
		return errors.New("html report: no runs")
	}
	if opts.Labels != nil && len(opts.Labels) != len(runs) {
		return fmt.Errorf("html report: %d labels for %d runs", len(opts.Labels), len(runs))
	}
	for i, r := range runs {
		if r == nil {
			return fmt.Errorf("html report: run %d is nil", i)
		}
	}
	if strings.Contains(strings.ToLower(library), "</script") {
		return errors.New("html report: the chart library contains </script")
	}
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = orValue(r.Name, fmt.Sprintf("run %d", i+1))
		if opts.Labels != nil && opts.Labels[i] != "" {
			labels[i] = opts.Labels[i]
		}
	}

	v := htmlView{Library: template.JS(library), LibraryName: ChartLibrary}
	v.Tool = strings.TrimSpace(orValue(runs[0].Tool, "mailbench") + " " + runs[0].Version)
	var charts []chartSpec
	if len(runs) > 1 {
		cmp, specs := compareView(runs, labels)
		v.Compare = cmp
		charts = append(charts, specs...)
	}
	for i, r := range runs {
		id := "run"
		if len(runs) > 1 {
			id = "run" + strconv.Itoa(i+1)
		}
		rv, specs := runView(r, id, labels[i])
		v.Runs = append(v.Runs, rv)
		charts = append(charts, specs...)
	}
	switch {
	case opts.Title != "":
		v.Title = opts.Title
	case len(runs) == 1:
		v.Title = "mailbench report: " + labels[0]
	default:
		v.Title = "mailbench comparison: " + strings.Join(labels, " vs ")
	}
	data, err := json.Marshal(chartData{Charts: charts})
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	// json.Marshal escapes <, > and & (and U+2028/2029), so the data cannot
	// end the script element it is in.
	v.Data = template.JS(data)
	v.Charts = len(charts)
	return htmlTemplate.Execute(w, v)
}

// The page's view model: every value already formatted.
type htmlView struct {
	Title       string
	Tool        string
	Compare     *htmlCompare
	Runs        []htmlRun
	Charts      int
	Data        template.JS
	Library     template.JS
	LibraryName string
}

type htmlCompare struct {
	Labels []string
	Lines  []htmlLine
	Why    []string
	Charts []htmlChart
}

type htmlLine struct {
	Name  string
	Cells []htmlCell
}

type htmlCell struct{ Text, Class string }

type htmlChart struct {
	ID, Title, Note string
	Height          int  // px
	Half            bool // half the page's width
}

type htmlKV struct{ Key, Value string }

type htmlRun struct {
	ID, Label     string
	Verdict       string
	VerdictClass  string // ok, fail, partial
	PartialReason string // "" unless partial
	Header        []htmlKV
	Warnings      []string
	Rows          []htmlRow
	ErrorRow      htmlRow
	ErrorClasses  string
	DeliveryNote  bool
	Failing       []string
	Figures       []htmlKV
	Connect       []htmlConnect
	// ConnectNotes: the TLS attribution of each connect function
	// (metrics.FunctionBreakdown.StallLine).
	ConnectNotes []string
	// Sections are the report's text sections, each under its title:
	// the evidence that the run is valid (the generator's health, the
	// server's clock), the server's resources, the over-time table and
	// the delivery accounting; a section without lines is left out.
	Sections []htmlLines
	Charts   []htmlChart
}

// htmlLines is a text section of the page, its lines as the text report
// has them.
type htmlLines struct {
	Title, Class string
	Lines        []string
}

type htmlRow struct {
	Function, Limit, Required, Percent, Operations, Errors, P50, P95, P99, Max, Result string
	Pass                                                                               bool
}

type htmlConnect struct {
	Function, Connects, TCP, TLS, Greeting, Auth, Handshakes, Resumed string
}

// The chart data read by the page's script; see the template.
type chartData struct {
	Charts []chartSpec `json:"charts"`
}

type chartSpec struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"` // line, bar, doughnut
	Labels     []string          `json:"labels,omitempty"`
	FullLabels []string          `json:"fullLabels,omitempty"` // tooltip titles when labels are shortened
	Datasets   []chartDataset    `json:"datasets"`
	XTitle     string            `json:"xTitle,omitempty"`
	YTitle     string            `json:"yTitle,omitempty"`
	Y2Title    string            `json:"y2Title,omitempty"`
	XLinear    bool              `json:"xLinear,omitempty"`
	XMax       float64           `json:"xMax,omitempty"`
	XTicks     map[string]string `json:"xTicks,omitempty"` // linear x: tick value → label
	ValueLog   bool              `json:"valueLog,omitempty"`
	Horizontal bool              `json:"horizontal,omitempty"`
	Stacked    bool              `json:"stacked,omitempty"`
	Unit       string            `json:"unit,omitempty"` // appended to values in tooltips
}

type chartDataset struct {
	Label  string     `json:"label"`
	Type   string     `json:"type,omitempty"` // overrides the chart's
	Data   []*float64 `json:"data,omitempty"`
	Points []xy       `json:"points,omitempty"`
	Axis   string     `json:"axis,omitempty"` // "y2": the right-hand axis
	Color  string     `json:"color"`
	Colors []string   `json:"colors,omitempty"` // per bar or slice
	Dash   bool       `json:"dash,omitempty"`
	// Hidden starts the series hidden: its legend entry shows it.
	Hidden bool `json:"hidden,omitempty"`
}

type xy struct {
	X   float64  `json:"x"`
	Y   *float64 `json:"y"`
	Tag string   `json:"tag,omitempty"`
}

// palette colours functions (by their place in measure.AllFunctions) and
// runs (by position). It has a distinct colour for every function of
// measure.AllFunctions (a test checks), so no two series of a chart share
// one.
var palette = []string{
	"#4e79a7", "#f28e2b", "#499894", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
	"#9c755f", "#6b6ecf", "#17becf", "#bcbd22", "#8c564b", "#e377c2", "#7f7f7f", "#2f4b7c",
	"#a05195", "#ffa600", "#003f5c", "#66c2a5",
}

// colorLimit and colorTarget draw the compliance limits and the target
// rate: reference lines, not series.
const (
	colorLimit  = "#d62728"
	colorTarget = "#1d2430"
)

const (
	colorOK   = "#59a14f"
	colorBad  = "#e15759"
	colorWarn = "#edc948"
	colorInfo = "#4e79a7"
)

func functionColor(f measure.Function, extra int) string {
	if i := slices.Index(measure.AllFunctions, f); i >= 0 {
		return palette[i%len(palette)]
	}
	return palette[(len(measure.AllFunctions)+extra)%len(palette)]
}

func num(v float64) *float64 { return &v }

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(us(d)) / 1000 }

// logMS is ms(d), or nil when d is not positive (a logarithmic axis has
// no place for it).
func logMS(d time.Duration) *float64 {
	if us(d) <= 0 {
		return nil
	}
	return num(ms(d))
}

// shortLabel keeps chart axes readable: the long IMAP function names are
// cut (the tooltip shows the full name).
func shortLabel(s string) string {
	const max = 30
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

func verdictOf(r *report.Run) (text, class string) {
	switch {
	case r.Partial:
		return "PARTIAL", "partial"
	case r.Table.Compliant:
		return "COMPLIANT", "ok"
	default:
		return "NOT COMPLIANT", "fail"
	}
}

// failingReasons are the "Failing:" lines of the text report.
func failingReasons(r *report.Run) []string {
	if r.Table.Compliant {
		return nil
	}
	var out []string
	for _, row := range r.Table.Rows {
		if !row.Pass {
			out = append(out, string(row.Function)+": "+row.Reason)
		}
	}
	if e := r.Table.Errors; !e.Pass {
		out = append(out, compliance.ErrorRateName+": "+e.Reason)
	}
	if pct, ok := r.DroppedPercent(); ok && r.MaxDroppedPercent > 0 && pct >= r.MaxDroppedPercent {
		out = append(out, fmt.Sprintf("%s: %.2f%% of the sessions due could not start (must stay below %s%%): the load offered was below the target",
			report.DroppedRow, pct, compliance.FormatPercentLimit(r.MaxDroppedPercent)))
	}
	out = append(out, r.StreamFailingReasons()...)
	if r.Delivery != nil {
		for _, f := range r.Delivery.Failing() {
			out = append(out, report.DeliveryRow+": "+f)
		}
	}
	for _, c := range r.ServerCriteria {
		if !c.Pass {
			out = append(out, c.Row()+": "+c.Reason())
		}
	}
	return out
}

func runView(r *report.Run, id, label string) (htmlRun, []chartSpec) {
	v := htmlRun{ID: id, Label: label, Warnings: r.Warnings}
	v.Verdict, v.VerdictClass = verdictOf(r)
	if r.Partial {
		v.PartialReason = orValue(r.PartialReason, "stopped early")
	}
	target := fmt.Sprintf("IMAP %s, SMTP %s", orDash(r.Target.IMAP), orDash(r.Target.SMTP))
	if r.Target.Embedded {
		target += " (embedded demo target)"
	}
	v.Header = []htmlKV{
		{"Run", orDash(r.Name)},
		{"Config", orValue(r.Config, "built-in defaults")},
		{"Seed", strconv.FormatInt(r.Seed, 10)},
		{"Tool", orDash(strings.TrimSpace(r.Tool + " " + r.Version))},
		{"Target", target},
		{"Sink", orValue(r.Target.Sink, "none")},
		{"Window", report.FormatTime(r.Started) + " → " + report.FormatTime(r.Ended)},
		{"Phases", fmt.Sprintf("warm-up %v, measurement %v, ramp-down %v", r.Warmup, r.Measurement, r.Rampdown)},
	}

	for _, row := range r.Table.Rows {
		hr := htmlRow{
			Function: string(row.Function), Limit: compliance.FormatLimitSeconds(row.Limit) + " s",
			Required: ">" + compliance.FormatPercentLimit(row.RequiredPercent) + "%",
			Percent:  "-", Operations: fmtInt(row.Operations), Errors: fmtInt(row.Errors),
			P50: "-", P95: "-", P99: "-", Max: "-", Result: passFail(row.Pass), Pass: row.Pass,
		}
		if row.Operations > 0 {
			hr.Percent = compliance.FormatCompliant(row.WithinLimit, row.Operations) + "%"
			hr.P50, hr.P95, hr.P99, hr.Max = fmtMS(row.P50), fmtMS(row.P95), fmtMS(row.P99), fmtMS(row.Max)
		}
		if row.Function == measure.DeliveryLocal && row.Operations > 0 {
			v.DeliveryNote = true
		}
		v.Rows = append(v.Rows, hr)
	}
	e := r.Table.Errors
	v.ErrorRow = htmlRow{Function: compliance.ErrorRateName, Limit: "NA",
		Required: "<" + compliance.FormatPercentLimit(e.MaxPercent) + "%", Percent: "-",
		Operations: fmtInt(e.Operations), Errors: fmtInt(e.Errors), Result: passFail(e.Pass), Pass: e.Pass}
	if e.Operations > 0 {
		v.ErrorRow.Percent = compliance.FormatErrorRate(e.Errors, e.Operations) + "%"
	}
	v.ErrorClasses = report.ErrorClasses(r.Table)
	v.Failing = failingReasons(r)

	achieved := fmtFloat1(r.AchievedSessionsPerHour)
	if lo, hi := r.AchievedBand(); hi > 0 && !r.Partial && r.CouldNotRun == "" {
		achieved += " (the target's 95% Poisson band over this window: " + report.FormatWhole(lo) + "–" + report.FormatWhole(hi) + ")"
	}
	v.Figures = []htmlKV{
		{"Target sessions/hour", fmtFloat1(r.TargetSessionsPerHour)},
		{"Achieved sessions/hour", achieved},
		{"Load", r.LoadLine(r.TargetSessionsPerHour)},
		{"Sessions", fmt.Sprintf("started %s, completed %s, failed %s", fmtInt(r.SessionsStarted), fmtInt(r.SessionsCompleted), fmtInt(r.SessionsFailed))},
		{"Late / dropped sessions", fmt.Sprintf("%s late, %s dropped", fmtInt(r.SessionsLate), fmtInt(r.SessionsDropped))},
	}
	if parts := r.DropCounts(); len(parts) > 0 {
		v.Figures = append(v.Figures, htmlKV{"Dropped by cause", strings.Join(parts, "; ")}, htmlKV{"Drops attributed to", r.DropAttribution()})
	}
	for _, st := range r.MailStreams() {
		if l := r.StreamDropLine(st); l != "" {
			v.Figures = append(v.Figures, htmlKV{"Mail dropped", l})
		}
	}
	if len(r.SessionsByType) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.SessionsByType)) {
			parts = append(parts, k+" "+fmtInt(r.SessionsByType[k]))
		}
		v.Figures = append(v.Figures, htmlKV{"Sessions by type", strings.Join(parts, ", ")})
	}
	if l := r.ConcurrencyLine(); l != "" {
		v.Figures = append(v.Figures, htmlKV{"Concurrency", l})
	} else {
		v.Figures = append(v.Figures, htmlKV{"Max concurrent sessions", fmtInt(int64(r.MaxConcurrentObserved))})
	}
	if r.Target.Sink != "" || r.Sink.Messages > 0 {
		v.Figures = append(v.Figures, htmlKV{"Sink", fmt.Sprintf("%s messages, %s recipients, %s bytes; relay delay p50 %s ms, p95 %s ms, max %s ms",
			fmtInt(r.Sink.Messages), fmtInt(r.Sink.Recipients), fmtInt(r.Sink.Bytes),
			fmtMS(time.Duration(r.Sink.RelayDelayP50)), fmtMS(time.Duration(r.Sink.RelayDelayP95)), fmtMS(time.Duration(r.Sink.RelayDelayMax)))})
	}

	if r.Connect != nil {
		for _, f := range r.Connect.Functions {
			if f.Connects == 0 {
				continue
			}
			resumed := "-"
			if pct, ok := f.ResumedPercent(); ok {
				resumed = fmt.Sprintf("%d (%.1f%%)", f.Resumed, pct)
			}
			v.Connect = append(v.Connect, htmlConnect{Function: string(f.Function), Connects: fmtInt(f.Connects),
				TCP: partText(f.TCP.Count, f.TCP.P50(), f.TCP.P95()), TLS: partText(f.TLS.Count, f.TLS.P50(), f.TLS.P95()),
				Greeting:   partText(f.Greeting.Count, f.Greeting.P50(), f.Greeting.P95()),
				Auth:       partText(f.Auth.Count, f.Auth.P50(), f.Auth.P95()),
				Handshakes: fmtInt(f.Handshakes), Resumed: resumed})
			if line := f.StallLine(); line != "" {
				v.ConnectNotes = append(v.ConnectNotes, strings.TrimSpace(line))
			}
		}
	}
	var deliveryLines []string
	if r.Delivery != nil {
		deliveryLines = r.Delivery.Lines()
		if c := r.DeliveryChecks; c != nil {
			deliveryLines = append(deliveryLines, fmt.Sprintf("Delivery checker       %s checks, %s IMAP commands (not timed), %s errors",
				fmtInt(c.Checks), fmtInt(c.Commands), fmtInt(c.Errors)))
		}
	}

	var health bytes.Buffer
	if r.ServerClock != nil {
		fmt.Fprintf(&health, "Server clock             %s\n", r.ServerClock)
	}
	writeGenerator(&health, r.Generator)
	if why := r.GeneratorBound(); len(why) > 0 {
		fmt.Fprintf(&health, "GENERATOR-BOUND: %s\n", joinReasons(why))
	}
	var server, overTime, population bytes.Buffer
	writeServer(&server, r.Server)
	writePopulation(&population, r.Population)
	writeTimeline(&overTime, r.Timeline, DefaultTextWidth)
	for _, sec := range []htmlLines{
		{"Is the run valid? The generator's health and the server's clock", "health", textLines(health.String())},
		{"The server's resources", "server", textLines(server.String())},
		{"Over time", "overtime", textLines(overTime.String())},
		{"Delivery accounting", "delivery", deliveryLines},
		{"The population, by profile", "population", textLines(strings.TrimLeft(population.String(), "\n"))},
	} {
		if len(sec.Lines) > 0 {
			v.Sections = append(v.Sections, sec)
		}
	}

	var specs []chartSpec
	add := func(s chartSpec, title, note string, height int) {
		s.ID = id + "-" + s.ID
		specs = append(specs, s)
		half := s.Type == "doughnut" || s.ID == id+"-delivery"
		v.Charts = append(v.Charts, htmlChart{ID: s.ID, Title: title, Note: note, Height: height, Half: half})
	}
	rank := worstFirst(r)
	interval := ""
	if len(r.Timeline) > 0 {
		interval = " Intervals of " + r.Timeline[0].Length.String() + "."
	}
	if s, ok := timelineP95Chart(r.Timeline, protocolLimits(r), rank); ok {
		add(s, "Response time over time (p95 per function)",
			fmt.Sprintf("The 95th percentile per interval of the %d protocol functions that came closest to their limit, and of all protocol operations (dashed), by the time the operations started; logarithmic scale. The other functions are in the legend, hidden: click one to show it.%s", min(visibleFunctions, len(rank)), interval), 400)
	}
	if s, ok := timelineDeliveryChart(r.Timeline, r.Table); ok {
		add(s, "Delivery times over time (p95)", "The 95th percentile per interval of each delivery time, by the time the mail was accepted, against its limit (dashed); logarithmic scale."+interval, 300)
	}
	if s, ok := serverChart(r.Server); ok {
		add(s, "Server over time", "What the server used beside the run ([server]): the CPU of each process group and of the generator in cores (left axis), the host's CPU and busiest disk in percent (right axis, dashed); sampled every "+
			trimFloat(r.Server.IntervalSeconds)+" s from the run's start. Observations alongside the load, not a proven cause.", 300)
	}
	if s, ok := timelineLoadChart(r.Timeline, r.TargetSessionsPerHour); ok {
		add(s, "Load over time", "Sessions started per interval (bars, left axis); protocol operations and their errors per second, and deliveries per second when timed (lines, right axis).", 300)
	}
	if s, ok := timelineClientsChart(r.Timeline); ok {
		add(s, "Connected clients over time", "The clients of [clients] the run aimed to hold (dashed) and the fewest it held at any second of each interval (line, left axis); connections lost per interval (bars, right axis).", 260)
	}
	if s, n, ok := percentileChart(r, rank); ok {
		add(s, "Latency distribution per function", fmt.Sprintf("Percentiles of every operation's duration (failures included) from the HDR histograms of %d functions; logarithmic scales. Shown: the %d that came closest to their limit; the others, delivery times among them, are in the legend, hidden.", n, min(visibleFunctions, len(rank))), 400)
	}
	if s, ok := sessionTypeChart(r); ok {
		add(s, "Sessions by type", "Sessions started in the measurement window, by session type.", 260)
	}
	if s, ok := deliveryChart(r); ok {
		add(s, "Delivery accounting", "Every message sent in any phase (warm-up to the end of ramp-down): what was sent, what arrived, and what went wrong (missing, duplicated, corrupted and unexpected mail in red).", 300)
	}
	if s, ok := connectChart(r); ok {
		add(s, "Connect time breakdown", "Median of each part of a successful connect, stacked (ms).", 170)
	}
	return v, specs
}

func partText(count int64, p50, p95 time.Duration) string {
	if count == 0 {
		return "-"
	}
	return fmtMS(p50) + " / " + fmtMS(p95)
}

// timelineFunctions are the functions of any point, in table order.
func timelineFunctions(tl []metrics.Point) []measure.Function {
	set := map[measure.Function]bool{}
	for _, p := range tl {
		for _, fp := range p.Functions {
			set[fp.Function] = true
		}
	}
	fs := slices.Collect(maps.Keys(set))
	slices.SortFunc(fs, report.FunctionOrder)
	return fs
}

func timelineLabels(tl []metrics.Point) []string {
	labels := make([]string, len(tl))
	for i, iv := range tl {
		labels[i] = fmtOffset(iv.Start.Sub(tl[0].Start))
	}
	return labels
}

// timelineP95Chart has a line per function (the delivery times among
// them) and, dashed, the p95 of all protocol operations.
// protocolLimits are the distinct response-time limits of r's function rows
// (delivery times aside), ascending: the reference lines of the p95 chart.
func protocolLimits(r *report.Run) []time.Duration {
	var out []time.Duration
	for _, row := range r.Table.Rows {
		if row.Function == measure.DeliveryLocal || row.Function == measure.DeliveryRemote || row.Limit <= 0 {
			continue
		}
		if !slices.Contains(out, row.Limit) {
			out = append(out, row.Limit)
		}
	}
	slices.Sort(out)
	return out
}

func timelineP95Chart(tl []metrics.Point, limits []time.Duration, rank []measure.Function) (chartSpec, bool) {
	if len(tl) == 0 {
		return chartSpec{}, false
	}
	var fs []measure.Function
	for _, f := range timelineFunctions(tl) {
		if !measure.IsDelivery(f) {
			fs = append(fs, f)
		}
	}
	slices.SortStableFunc(fs, func(a, b measure.Function) int { return rankOf(rank, a) - rankOf(rank, b) })
	s := chartSpec{ID: "timeline-p95", Type: "line", Labels: timelineLabels(tl),
		XTitle: "time into the measurement window (m:ss)", YTitle: "p95 (ms)", ValueLog: true, Unit: " ms"}
	all := chartDataset{Label: "all protocol operations", Color: "#1d2430", Dash: true, Data: make([]*float64, len(tl))}
	for k, iv := range tl {
		if iv.Operations > 0 {
			all.Data[k] = logMS(iv.P95)
		}
	}
	s.Datasets = append(s.Datasets, all)
	for i, f := range fs {
		ds := functionSeries(f, i)
		ds.Data = make([]*float64, len(tl))
		for k, p := range tl {
			if i := slices.IndexFunc(p.Functions, func(fp metrics.FunctionPoint) bool { return fp.Function == f }); i >= 0 {
				ds.Data[k] = logMS(p.Functions[i].P95)
			}
		}
		s.Datasets = append(s.Datasets, ds)
	}
	for _, l := range limits {
		ds := chartDataset{Label: "limit (" + compliance.FormatLimitSeconds(l) + " s)", Color: colorLimit, Dash: true, Data: make([]*float64, len(tl))}
		for k := range tl {
			ds.Data[k] = logMS(l)
		}
		s.Datasets = append(s.Datasets, ds)
	}
	return s, true
}

// timelineDeliveryChart has the delivery times' p95 per interval, apart
// from the protocol operations (they are seconds where those are
// milliseconds), with their limits.
func timelineDeliveryChart(tl []metrics.Point, t compliance.Table) (chartSpec, bool) {
	var fs []measure.Function
	for _, f := range timelineFunctions(tl) {
		if measure.IsDelivery(f) {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return chartSpec{}, false
	}
	s := chartSpec{ID: "timeline-delivery", Type: "line", Labels: timelineLabels(tl),
		XTitle: "time into the measurement window (m:ss)", YTitle: "p95 (ms)", ValueLog: true, Unit: " ms"}
	var limits []time.Duration
	for i, f := range fs {
		ds := chartDataset{Label: string(f), Color: distinctColors[i%len(distinctColors)], Data: make([]*float64, len(tl))}
		for k, p := range tl {
			if i := slices.IndexFunc(p.Functions, func(fp metrics.FunctionPoint) bool { return fp.Function == f }); i >= 0 {
				ds.Data[k] = logMS(p.Functions[i].P95)
			}
		}
		s.Datasets = append(s.Datasets, ds)
		for _, row := range t.Rows {
			if row.Function == f && row.Limit > 0 && !slices.Contains(limits, row.Limit) {
				limits = append(limits, row.Limit)
			}
		}
	}
	for _, l := range limits {
		ds := chartDataset{Label: "limit (" + compliance.FormatLimitSeconds(l) + " s)", Color: colorLimit, Dash: true, Data: make([]*float64, len(tl))}
		for k := range tl {
			ds.Data[k] = logMS(l)
		}
		s.Datasets = append(s.Datasets, ds)
	}
	return s, true
}

// serverChart draws the server's CPU and disk over the run, when
// [server] watched anything with those figures.
func serverChart(srv *metrics.ServerReport) (chartSpec, bool) {
	if srv == nil || len(srv.Timeline) < 2 {
		return chartSpec{}, false
	}
	var names []string
	for _, f := range srv.Figures {
		if strings.HasSuffix(f.Name, ".cpu_cores") && f.Name != "host.cpu_cores" || f.Name == "host.cpu_percent" || f.Name == "host.disk_util_percent" {
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 {
		return chartSpec{}, false
	}
	t0 := srv.Timeline[0].At
	s := chartSpec{ID: "server", Type: "line", XTitle: "time into the run (m:ss)", YTitle: "cores", Y2Title: "percent"}
	for _, p := range srv.Timeline {
		s.Labels = append(s.Labels, fmtOffset(p.At.Sub(t0)))
	}
	for i, name := range names {
		ds := chartDataset{Label: name, Color: distinctColors[i%len(distinctColors)], Data: make([]*float64, len(srv.Timeline))}
		if strings.HasSuffix(name, "_percent") {
			ds.Axis, ds.Dash = "y2", true
		}
		for k, p := range srv.Timeline {
			if v, ok := p.Values[name]; ok {
				ds.Data[k] = num(math.Round(v*1000) / 1000)
			}
		}
		s.Datasets = append(s.Datasets, ds)
	}
	return s, true
}

// visibleFunctions is how many functions a per-function chart shows at
// first; the rest start hidden, a click on their legend entry away.
const visibleFunctions = 5

// distinctColors are colours no two of which are alike, for the series a chart
// shows at first: a reader tells five lines apart at a glance.
var distinctColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"}

// worstFirst orders the protocol functions of r's table by how close their
// p95 came to their limit, the closest first (ties in table order);
// functions without operations come last.
func worstFirst(r *report.Run) []measure.Function {
	type fr struct {
		f     measure.Function
		ratio float64
	}
	var rows []fr
	for _, row := range r.Table.Rows {
		if measure.IsDelivery(row.Function) {
			continue
		}
		ratio := -1.0
		if row.Operations > 0 && row.Limit > 0 {
			ratio = float64(row.P95) / float64(row.Limit)
		}
		rows = append(rows, fr{row.Function, ratio})
	}
	slices.SortStableFunc(rows, func(a, b fr) int {
		switch {
		case a.ratio > b.ratio:
			return -1
		case a.ratio < b.ratio:
			return 1
		}
		return 0
	})
	out := make([]measure.Function, len(rows))
	for i, x := range rows {
		out[i] = x.f
	}
	return out
}

// rankOf is f's place in rank; functions not in it (delivery times, a
// function of no row) after every ranked one.
func rankOf(rank []measure.Function, f measure.Function) int {
	if i := slices.Index(rank, f); i >= 0 {
		return i
	}
	return len(rank) + slices.Index(measure.AllFunctions, f)
}

// functionSeries is the series of the i-th function of a chart in rank
// order: the first visibleFunctions in distinct colours, the rest hidden
// in the palette's.
func functionSeries(f measure.Function, i int) chartDataset {
	if i < visibleFunctions {
		return chartDataset{Label: string(f), Color: distinctColors[i]}
	}
	return chartDataset{Label: string(f), Color: functionColor(f, i), Hidden: true}
}

// textLines splits a text section into its lines, without the blank ones
// at its ends.
func textLines(s string) []string {
	s = strings.Trim(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// timelineLoadChart has sessions started as bars and, as lines, the rates
// of protocol operations, of their errors and, when there are any, of
// delivery times.
func timelineLoadChart(tl []metrics.Point, targetPerHour float64) (chartSpec, bool) {
	if len(tl) == 0 {
		return chartSpec{}, false
	}
	s := chartSpec{ID: "timeline-load", Type: "bar", Labels: timelineLabels(tl),
		XTitle: "time into the measurement window (m:ss)", YTitle: "sessions started per interval", Y2Title: "per second"}
	sessions := chartDataset{Label: "sessions started", Color: palette[0], Data: make([]*float64, len(tl))}
	ops := chartDataset{Label: "operations/s", Type: "line", Axis: "y2", Color: palette[1], Data: make([]*float64, len(tl))}
	errs := chartDataset{Label: "errors/s", Type: "line", Axis: "y2", Color: colorBad, Data: make([]*float64, len(tl))}
	dlv := chartDataset{Label: "deliveries/s", Type: "line", Axis: "y2", Color: palette[6], Data: make([]*float64, len(tl))}
	target := chartDataset{Label: "target (sessions per interval)", Type: "line", Color: colorTarget, Dash: true, Data: make([]*float64, len(tl))}
	anyDlv := false
	for i, p := range tl {
		sessions.Data[i] = num(float64(p.Sessions))
		sec := p.Length.Seconds()
		ops.Data[i] = num(math.Round(float64(p.Operations)/sec*1000) / 1000)
		errs.Data[i] = num(math.Round(float64(p.Errors)/sec*1000) / 1000)
		dlv.Data[i] = num(math.Round(float64(p.Delivery.Operations)/sec*1000) / 1000)
		anyDlv = anyDlv || p.Delivery.Operations > 0
		target.Data[i] = num(math.Round(targetPerHour/3600*sec*10) / 10)
	}
	s.Datasets = []chartDataset{sessions, ops, errs}
	if targetPerHour > 0 {
		s.Datasets = append(s.Datasets, target)
	}
	if anyDlv {
		s.Datasets = append(s.Datasets, dlv)
	}
	return s, true
}

// timelineClientsChart has the connected clients targeted and held over
// time, and the connections lost, when the run had a connected population.
func timelineClientsChart(tl []metrics.Point) (chartSpec, bool) {
	if !slices.ContainsFunc(tl, func(p metrics.Point) bool { return p.Clients != nil }) {
		return chartSpec{}, false
	}
	s := chartSpec{ID: "timeline-clients", Type: "line", Labels: timelineLabels(tl),
		XTitle: "time into the measurement window (m:ss)", YTitle: "connected clients", Y2Title: "connections lost"}
	held := chartDataset{Label: "held (fewest in the interval)", Color: palette[0], Data: make([]*float64, len(tl))}
	target := chartDataset{Label: "target", Color: colorTarget, Dash: true, Data: make([]*float64, len(tl))}
	drops := chartDataset{Label: "connections lost", Type: "bar", Axis: "y2", Color: colorBad, Data: make([]*float64, len(tl))}
	for i, p := range tl {
		if c := p.Clients; c != nil {
			held.Data[i], target.Data[i], drops.Data[i] = num(float64(c.Held)), num(float64(c.Target)), num(float64(c.Drops))
		}
	}
	s.Datasets = []chartDataset{held, target, drops}
	return s, true
}

// spectrum is where the latency distribution chart samples a histogram:
// x = -log10(1 - p/100), so 90%, 99%, 99.9% and 99.99% are evenly spaced;
// the maximum is drawn at x = 5.
var spectrum = []float64{0, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.9, 99.95, 99.99}

const spectrumMaxX = 5

func percentileChart(r *report.Run, rank []measure.Function) (chartSpec, int, bool) {
	var fs []measure.Function
	for f, st := range r.Functions {
		if st != nil && st.Histogram != nil && st.Histogram.TotalCount() > 0 {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return chartSpec{}, 0, false
	}
	slices.SortFunc(fs, report.FunctionOrder)
	slices.SortStableFunc(fs, func(a, b measure.Function) int { return rankOf(rank, a) - rankOf(rank, b) })
	s := chartSpec{ID: "percentiles", Type: "line", XLinear: true, XMax: spectrumMaxX,
		XTicks: map[string]string{"0": "0%", "1": "90%", "2": "99%", "3": "99.9%", "4": "99.99%", "5": "max"},
		XTitle: "percentile", YTitle: "response time (ms)", ValueLog: true, Unit: " ms"}
	for i, f := range fs {
		h := r.Functions[f].Histogram
		ds := functionSeries(f, i)
		if measure.IsDelivery(f) && !ds.Hidden {
			ds.Hidden, ds.Color = true, functionColor(f, i) // seconds among milliseconds: shown on request
		}
		for _, p := range spectrum {
			x := math.Round(-math.Log10(1-p/100)*1e4) / 1e4
			d := time.Duration(h.ValueAtPercentile(p)) * time.Microsecond
			if p == 0 {
				d = time.Duration(h.Min()) * time.Microsecond
			}
			ds.Points = append(ds.Points, xy{X: x, Y: logMS(d), Tag: "p" + strconv.FormatFloat(p, 'f', -1, 64)})
		}
		ds.Points = append(ds.Points, xy{X: spectrumMaxX, Y: logMS(time.Duration(h.Max()) * time.Microsecond), Tag: "max"})
		s.Datasets = append(s.Datasets, ds)
	}
	return s, len(fs), true
}

func sessionTypeChart(r *report.Run) (chartSpec, bool) {
	if len(r.SessionsByType) == 0 {
		return chartSpec{}, false
	}
	keys := slices.Sorted(maps.Keys(r.SessionsByType))
	ds := chartDataset{Label: "sessions", Color: palette[0]}
	var total int64
	for _, k := range keys {
		total += r.SessionsByType[k]
	}
	labels := make([]string, len(keys))
	for i, k := range keys {
		n := r.SessionsByType[k]
		ds.Data = append(ds.Data, num(float64(n)))
		ds.Colors = append(ds.Colors, palette[i%len(palette)])
		// The numbers on the chart: in each slice's label (legend and tooltip).
		labels[i] = fmt.Sprintf("%s %s (%.0f%%)", k, fmtInt(n), 100*float64(n)/float64(max(total, 1)))
	}
	return chartSpec{ID: "session-types", Type: "doughnut", Labels: labels, Datasets: []chartDataset{ds}}, true
}

func connectChart(r *report.Run) (chartSpec, bool) {
	if r.Connect == nil {
		return chartSpec{}, false
	}
	s := chartSpec{ID: "connect", Type: "bar", Horizontal: true, Stacked: true, YTitle: "p50 (ms)", Unit: " ms"}
	parts := []struct {
		name  string
		color string
	}{{"TCP", palette[0]}, {"TLS", palette[1]}, {"greeting", palette[3]}, {"auth", palette[6]}}
	sets := make([]chartDataset, len(parts))
	for i, p := range parts {
		sets[i] = chartDataset{Label: p.name, Color: p.color}
	}
	for _, f := range r.Connect.Functions {
		if f.Connects == 0 {
			continue
		}
		s.Labels = append(s.Labels, string(f.Function))
		for i, p := range []time.Duration{f.TCP.P50(), f.TLS.P50(), f.Greeting.P50(), f.Auth.P50()} {
			sets[i].Data = append(sets[i].Data, num(ms(p)))
		}
	}
	if len(s.Labels) == 0 {
		return chartSpec{}, false
	}
	s.Datasets = sets
	return s, true
}

func deliveryChart(r *report.Run) (chartSpec, bool) {
	d := r.Delivery
	if d == nil {
		return chartSpec{}, false
	}
	bars := []struct {
		label string
		n     int64
		color string
	}{
		{"Messages sent", d.Sent, colorInfo},
		{"Accepted", d.Accepted, colorInfo},
		{"Rejected", d.Rejected, colorWarn},
		{"Local deliveries", d.LocalDeliveries, colorInfo},
		{"Seen in INBOX", d.DeliveredLocal, colorOK},
		{"Remote deliveries", d.RemoteDeliveries, colorInfo},
		{"Arrived at the sink", d.RelayedRemote, colorOK},
		{"Missing", d.Lost, colorBad},
		{"Duplicated", d.Duplicated, colorBad},
		{"Corrupted", d.Corrupted, colorBad},
		{"Unexpected", d.Unexpected, colorBad},
	}
	s := chartSpec{ID: "delivery", Type: "bar", Horizontal: true, YTitle: "messages / deliveries"}
	ds := chartDataset{Label: "count", Color: colorInfo}
	for _, b := range bars {
		s.Labels = append(s.Labels, b.label)
		ds.Data = append(ds.Data, num(float64(b.n)))
		ds.Colors = append(ds.Colors, b.color)
	}
	s.Datasets = []chartDataset{ds}
	return s, true
}

// compareView is the comparison of several runs: the table of
// WriteSideBySide and its charts.
func compareView(runs []*report.Run, labels []string) (*htmlCompare, []chartSpec) {
	c := &htmlCompare{Labels: labels}
	funcs := report.TableFunctions(runs)
	line := func(name string, cell func(*report.Run) htmlCell) {
		l := htmlLine{Name: name}
		for _, r := range runs {
			l.Cells = append(l.Cells, cell(r))
		}
		c.Lines = append(c.Lines, l)
	}
	text := func(f func(*report.Run) string) func(*report.Run) htmlCell {
		return func(r *report.Run) htmlCell { return htmlCell{Text: f(r)} }
	}
	line("name", text(func(r *report.Run) string { return orDash(r.Name) }))
	line("config", text(func(r *report.Run) string { return orValue(r.Config, "built-in defaults") }))
	line("version", text(func(r *report.Run) string { return orDash(strings.TrimSpace(r.Tool + " " + r.Version)) }))
	line("measurement", text(func(r *report.Run) string { return r.Measurement.String() }))
	line("target sessions/hour", text(func(r *report.Run) string { return fmtFloat(r.TargetSessionsPerHour, 0) }))
	base := runs[0] // changes are against the first run; * beyond the noise (delta.go)
	line("achieved sessions/hour", text(func(r *report.Run) string { return fmtFloat(r.AchievedSessionsPerHour, 0) + report.RateDelta(base, r) }))
	line("users", text(func(r *report.Run) string { return r.UsersCell() }))
	line("late / dropped sessions", text(func(r *report.Run) string { return r.DroppedCell() }))
	for _, f := range funcs {
		line(string(f)+" % compliant", func(r *report.Run) htmlCell {
			row, ok := r.Table.Row(f)
			if !ok || row.Operations == 0 {
				if ok {
					return htmlCell{Text: "- " + passFail(row.Pass), Class: passClass(row.Pass)}
				}
				return htmlCell{Text: "-"}
			}
			return htmlCell{Text: compliance.FormatCompliant(row.WithinLimit, row.Operations) + "% " + passFail(row.Pass), Class: passClass(row.Pass)}
		})
		line(string(f)+" p95 (ms)", text(func(r *report.Run) string {
			row, ok := r.Table.Row(f)
			if !ok || row.Operations == 0 {
				return "-"
			}
			return fmtMS(row.P95) + report.P95Delta(base, r, f)
		}))
	}
	line(compliance.ErrorRateName, func(r *report.Run) htmlCell {
		e := r.Table.Errors
		if e.Operations == 0 {
			return htmlCell{Text: "- " + passFail(e.Pass), Class: passClass(e.Pass)}
		}
		return htmlCell{Text: compliance.FormatErrorRate(e.Errors, e.Operations) + "% " + passFail(e.Pass) + report.ErrorDelta(base, r), Class: passClass(e.Pass)}
	})
	line("delivery missing / duplicated / corrupted", func(r *report.Run) htmlCell {
		d := r.Delivery
		if d == nil {
			return htmlCell{Text: "-"}
		}
		bad := d.Lost+d.Duplicated+d.Corrupted > 0
		return htmlCell{Text: fmtInt(d.Lost) + " / " + fmtInt(d.Duplicated) + " / " + fmtInt(d.Corrupted), Class: passClass(!bad)}
	})
	line("verdict", func(r *report.Run) htmlCell {
		t, class := verdictOf(r)
		return htmlCell{Text: t, Class: class}
	})
	if w := report.PhasesDiffer(runs, labels); w != "" {
		c.Why = append(c.Why, w)
	}
	for i, r := range runs {
		if r.Table.Compliant && !r.Partial {
			continue
		}
		var why []string
		if r.Partial {
			why = append(why, "partial ("+orValue(r.PartialReason, "stopped early")+")")
		}
		if len(r.Table.Failing) > 0 {
			why = append(why, "failing: "+strings.Join(r.Table.Failing, ", "))
		}
		c.Why = append(c.Why, labels[i]+": "+strings.Join(why, "; "))
	}

	// p95 per function per run: grouped horizontal bars.
	p95 := chartSpec{ID: "compare-p95", Type: "bar", Horizontal: true, ValueLog: true, YTitle: "p95 (ms)", Unit: " ms"}
	for _, f := range funcs {
		p95.Labels = append(p95.Labels, shortLabel(string(f)))
		p95.FullLabels = append(p95.FullLabels, string(f))
	}
	for i, r := range runs {
		ds := chartDataset{Label: labels[i], Color: palette[i%len(palette)]}
		for _, f := range funcs {
			row, ok := r.Table.Row(f)
			if !ok || row.Operations == 0 {
				ds.Data = append(ds.Data, nil)
				continue
			}
			ds.Data = append(ds.Data, logMS(row.P95))
		}
		p95.Datasets = append(p95.Datasets, ds)
	}
	rate := chartSpec{ID: "compare-rate", Type: "bar", YTitle: "sessions/hour", Labels: labels}
	target := chartDataset{Label: "target", Color: palette[14]}
	achieved := chartDataset{Label: "achieved", Color: palette[0]}
	for _, r := range runs {
		target.Data = append(target.Data, num(r.TargetSessionsPerHour))
		achieved.Data = append(achieved.Data, num(math.Round(r.AchievedSessionsPerHour*10)/10))
		_, class := verdictOf(r)
		achieved.Colors = append(achieved.Colors, map[string]string{"ok": colorOK, "fail": colorBad, "partial": colorWarn}[class])
	}
	rate.Datasets = []chartDataset{target, achieved}

	var specs []chartSpec
	if len(funcs) > 0 {
		specs = append(specs, p95)
		per := max(22, 9*len(runs))
		c.Charts = append(c.Charts, htmlChart{ID: p95.ID, Title: "p95 per function and run",
			Note: "Each function's 95th percentile in each run (logarithmic scale).", Height: 90 + len(funcs)*per})
	}
	specs = append(specs, rate)
	c.Charts = append(c.Charts, htmlChart{ID: rate.ID, Title: "Sessions per hour",
		Note: "Target and achieved sessions/hour of each run; achieved is green when the run is compliant, red when not, yellow when partial.", Height: 300})
	return c, specs
}

func passClass(ok bool) string {
	if ok {
		return "ok"
	}
	return "fail"
}

var htmlTemplate = template.Must(template.New("html").Parse(htmlSource))

// htmlSource is the page. Its script draws the charts described by the
// JSON block #mb-data, then sets data-rendered (charts created) and
// data-painted (canvases with pixels) on <body>; errors of any script
// (window.onerror, unhandled rejections, console.error) are listed in
// #mb-errors, which the browser test requires to be empty.
const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{{.Tool}}">
<title>{{.Title}}</title>
<style>
:root { --ok: #2e7d32; --fail: #c62828; --partial: #b26a00; --line: #d9dde3; --muted: #5f6b7a; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0; color: #1d2430; background: #f5f6f8; font-size: 14px; }
main { max-width: 1240px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 22px; margin: 8px 0 12px; }
h2 { font-size: 18px; margin: 28px 0 10px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
section.card > h2:first-child { margin-top: 4px; }
section.card, details.run > .body { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
details.run > summary { cursor: pointer; font-size: 18px; font-weight: 600; margin: 24px 0 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: right; vertical-align: top; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 14em; }
thead th { background: #eef1f5; font-weight: 600; }
table.kv th { text-align: left; width: 15em; font-weight: 600; background: none; white-space: nowrap; word-break: normal; }
table.kv td { text-align: left; white-space: normal; }
.scroll { overflow-x: auto; }
.ok { color: var(--ok); font-weight: 600; }
.fail { color: var(--fail); font-weight: 600; }
.partial { color: var(--partial); font-weight: 600; }
tr.errorrate td { border-top: 2px solid #9aa5b4; }
.verdict { display: inline-block; padding: 4px 12px; border-radius: 4px; color: #fff; font-weight: 700; letter-spacing: .03em; }
.verdict.ok { background: var(--ok); color: #fff; }
.verdict.fail { background: var(--fail); color: #fff; }
.verdict.partial { background: var(--partial); color: #fff; }
.banner { background: #fff4e0; border: 1px solid #f0c36d; padding: 8px 12px; border-radius: 4px; margin: 10px 0; }
.warnings { background: #fffbe6; border: 1px solid #f0e09a; padding: 6px 12px 6px 28px; border-radius: 4px; }
.note, .muted { color: var(--muted); font-size: 12.5px; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-top: 16px; }
.chart { grid-column: 1 / -1; min-width: 0; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
.chart.half { grid-column: auto; }
.chart h3 { margin: 0 0 2px; }
.chart .box { position: relative; width: 100%; }
pre.lines { margin: 0; font-size: 13px; }
#mb-errors { background: #fdecea; border: 1px solid var(--fail); color: var(--fail); padding: 8px; white-space: pre-wrap; }
footer { margin-top: 30px; }
</style>
<script>
window.mbErrors = [];
window.mbError = function (msg) {
  window.mbErrors.push(String(msg));
  var el = document.getElementById("mb-errors");
  if (el) { el.textContent = window.mbErrors.join("\n"); el.hidden = false; }
};
window.addEventListener("error", function (e) {
  if (e.target && e.target !== window) { window.mbError("resource failed to load: " + (e.target.src || e.target.href || e.target.tagName)); return; }
  window.mbError("error: " + e.message + " (" + (e.filename || "") + ":" + (e.lineno || 0) + ")");
}, true);
window.addEventListener("unhandledrejection", function (e) { window.mbError("unhandled rejection: " + e.reason); });
(function () {
  var ce = console.error;
  console.error = function () { window.mbError("console.error: " + Array.prototype.join.call(arguments, " ")); return ce.apply(console, arguments); };
})();
</script>
</head>
<body data-charts="{{.Charts}}">
<main>
<pre id="mb-errors" hidden></pre>
<h1>{{.Title}}</h1>
{{- with .Compare}}
<section class="card" id="comparison">
<h2>Comparison</h2>
<div class="scroll"><table class="compare">
<thead><tr><th></th>{{range .Labels}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Lines}}
<tr><td>{{.Name}}</td>{{range .Cells}}<td{{if .Class}} class="{{.Class}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- if .Why}}
<ul>
{{- range .Why}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
</section>
<div class="charts">
{{- range .Charts}}
{{template "chart" .}}
{{- end}}
</div>
{{- end}}
{{- $multi := .Compare}}
{{- range .Runs}}
{{- if $multi}}
<details class="run" id="{{.ID}}" open>
<summary>{{.Label}} <span class="verdict {{.VerdictClass}}">{{.Verdict}}</span></summary>
<div class="body">
{{- else}}
<div id="{{.ID}}">
<p><span class="verdict {{.VerdictClass}}">{{.Verdict}}</span></p>
{{- end}}
{{- if .PartialReason}}
<div class="banner"><strong>PARTIAL RUN: {{.PartialReason}}.</strong> The measurement window did not complete; this is not a valid result.</div>
{{- end}}
<table class="kv header">
{{- range .Header}}
<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>
{{- end}}
</table>
{{- if .Warnings}}
<h3>Warnings</h3>
<ul class="warnings">
{{- range .Warnings}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
<h3>Summary results</h3>
<div class="scroll"><table class="compliance">
<thead><tr><th>Function</th><th>Limit</th><th>Required</th><th>% within</th><th>Operations</th><th>Errors</th><th>p50 (ms)</th><th>p95 (ms)</th><th>p99 (ms)</th><th>Max (ms)</th><th>Result</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="row"><td>{{.Function}}</td><td>{{.Limit}}</td><td>{{.Required}}</td><td>{{.Percent}}</td><td>{{.Operations}}</td><td>{{.Errors}}</td><td>{{.P50}}</td><td>{{.P95}}</td><td>{{.P99}}</td><td>{{.Max}}</td><td class="{{if .Pass}}ok{{else}}fail{{end}}">{{.Result}}</td></tr>
{{- end}}
{{- with .ErrorRow}}
<tr class="errorrate"><td>{{.Function}}</td><td>{{.Limit}}</td><td>{{.Required}}</td><td>{{.Percent}}</td><td>{{.Operations}}</td><td>{{.Errors}}</td><td></td><td></td><td></td><td></td><td class="{{if .Pass}}ok{{else}}fail{{end}}">{{.Result}}</td></tr>
{{- end}}
</tbody>
</table></div>
{{- if .ErrorClasses}}
<p class="note">Errors by class: {{.ErrorClasses}}</p>
{{- end}}
{{- if .DeliveryNote}}
<p class="note">Delivery Time (local) is the time from SMTP acceptance to the server's announcement of the message (IDLE EXISTS, millisecond resolution) for watched INBOXes, else to its INTERNALDATE + 0.5 s (IMAP dates have 1 s resolution: ±0.5 s). The delivery accounting says how many deliveries were timed each way.</p>
{{- end}}
{{- if .Failing}}
<h3>Failing</h3>
<ul class="failing">
{{- range .Failing}}
<li class="fail">{{.}}</li>
{{- end}}
</ul>
{{- end}}
<h3>Load</h3>
<table class="kv figures">
{{- range .Figures}}
<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>
{{- end}}
</table>
{{- if .Connect}}
<h3>Connect time breakdown (successful connects; p50 / p95 ms)</h3>
<div class="scroll"><table class="connect">
<thead><tr><th>Function</th><th>Connects</th><th>TCP</th><th>TLS</th><th>Greeting</th><th>Auth</th><th>Handshakes</th><th>Resumed</th></tr></thead>
<tbody>
{{- range .Connect}}
<tr><td>{{.Function}}</td><td>{{.Connects}}</td><td>{{.TCP}}</td><td>{{.TLS}}</td><td>{{.Greeting}}</td><td>{{.Auth}}</td><td>{{.Handshakes}}</td><td>{{.Resumed}}</td></tr>
{{- end}}
</tbody>
</table></div>
{{- range .ConnectNotes}}
<p class="connect-note">{{.}}</p>
{{- end}}
{{- end}}
{{- range .Sections}}
<h3>{{.Title}}</h3>
<pre class="lines {{.Class}}">
{{- range .Lines}}
{{.}}
{{- end}}
</pre>
{{- end}}
<div class="charts">
{{- range .Charts}}
{{template "chart" .}}
{{- end}}
</div>
{{- if $multi}}
</div>
</details>
{{- else}}
</div>
{{- end}}
{{- end}}
<footer class="muted">Generated by {{.Tool}}. Charts drawn by {{.LibraryName}} (MIT licence), embedded in this file: it needs no network access.</footer>
</main>
<script type="application/json" id="mb-data">{{.Data}}</script>
<script>
{{.Library}}
</script>
<script>
(function () {
  "use strict";
  var body = document.body;
  var specs = [];
  try {
    specs = JSON.parse(document.getElementById("mb-data").textContent).charts;
  } catch (e) {
    window.mbError("chart data: " + e);
    return;
  }
  if (typeof Chart === "undefined") {
    window.mbError("the chart library did not load");
    return;
  }
  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16 & 255) + "," + (n >> 8 & 255) + "," + (n & 255) + "," + a + ")";
  }
  function config(s) {
    var isLineChart = s.type === "line";
    var datasets = s.datasets.map(function (d) {
      var line = (d.type || s.type) === "line";
      var ds = {
        label: d.label, data: d.points || d.data, type: d.type || undefined,
        borderColor: d.colors || d.color, backgroundColor: d.colors ? d.colors.map(function (c) { return alpha(c, 0.75); }) : alpha(d.color, line ? 0.15 : 0.75),
        borderWidth: line ? 2 : 1, pointRadius: line ? (isLineChart && (d.points || d.data).length > 60 ? 0 : 2) : undefined,
        pointHoverRadius: 4, spanGaps: true, tension: 0, borderDash: d.dash ? [6, 4] : undefined, hidden: !!d.hidden,
      };
      if (d.axis === "y2") { ds.yAxisID = "y2"; ds.order = 0; } else if (!line) { ds.order = 1; }
      return ds;
    });
    var cfg = {
      type: s.type,
      data: { labels: s.labels, datasets: datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: s.type === "doughnut" ? undefined : { mode: s.xLinear ? "nearest" : "index", intersect: false },
        plugins: {
          legend: { display: s.type === "doughnut" || s.datasets.length > 1, position: s.type === "doughnut" ? "right" : "bottom",
            labels: { boxWidth: 14, font: { size: 11 } } },
          tooltip: { callbacks: {} },
        },
      },
    };
    var unit = s.unit || "";
    cfg.options.plugins.tooltip.callbacks.label = function (ctx) {
      var v = s.horizontal ? ctx.parsed.x : ctx.parsed.y;
      if (s.type === "doughnut") v = ctx.parsed;
      var tag = ctx.raw && ctx.raw.tag ? " (" + ctx.raw.tag + ")" : "";
      return ctx.dataset.label + tag + ": " + (v == null ? "-" : v.toLocaleString("en-US")) + unit;
    };
    if (s.fullLabels) {
      cfg.options.plugins.tooltip.callbacks.title = function (items) { return items.length ? s.fullLabels[items[0].dataIndex] : ""; };
    }
    if (s.type === "doughnut") return cfg;
    var cat = { title: { display: !!s.xTitle, text: s.xTitle }, stacked: !!s.stacked, ticks: { autoSkip: !s.horizontal, maxRotation: 0 } };
    var val = { type: s.valueLog ? "logarithmic" : "linear", beginAtZero: !s.valueLog, stacked: !!s.stacked,
      title: { display: !!s.yTitle, text: s.yTitle } };
    if (s.valueLog) {
      // Label 1, 2 and 5 of every decade only.
      val.ticks = { callback: function (v) {
        var m = Math.round(v / Math.pow(10, Math.floor(Math.log10(v))) * 1000) / 1000;
        return m === 1 || m === 2 || m === 5 ? v.toLocaleString("en-US") : "";
      } };
    }
    if (s.xLinear) {
      cat.type = "linear"; cat.min = 0; cat.max = s.xMax;
      cat.ticks = { stepSize: 1, callback: function (v) { return s.xTicks && s.xTicks[String(v)] !== undefined ? s.xTicks[String(v)] : ""; } };
    }
    if (s.horizontal) {
      cfg.options.indexAxis = "y";
      cfg.options.scales = { y: cat, x: val };
    } else {
      cfg.options.scales = { x: cat, y: val };
    }
    if (s.y2Title) {
      cfg.options.scales.y2 = { type: "linear", position: "right", beginAtZero: true, grid: { drawOnChartArea: false },
        title: { display: true, text: s.y2Title } };
    }
    return cfg;
  }
  var rendered = 0;
  specs.forEach(function (s) {
    try {
      var canvas = document.getElementById(s.id);
      if (!canvas) throw new Error("no canvas #" + s.id);
      new Chart(canvas, config(s));
      canvas.setAttribute("data-rendered", "1");
      rendered++;
    } catch (e) {
      window.mbError("chart " + s.id + ": " + (e && e.stack || e));
    }
  });
  body.setAttribute("data-rendered", String(rendered));
  // After the charts have drawn: count the canvases that hold pixels.
  setTimeout(function () {
    var painted = 0;
    document.querySelectorAll("canvas").forEach(function (c) {
      try {
        var px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        for (var i = 3; i < px.length; i += 4 * 7) { if (px[i] !== 0) { painted++; return; } }
      } catch (e) { window.mbError("canvas " + c.id + ": " + e); }
    });
    body.setAttribute("data-painted", String(painted));
  }, 50);
})();
</script>
</body>
</html>
{{define "chart"}}<div class="chart{{if .Half}} half{{end}}" id="{{.ID}}-card"><h3>{{.Title}}</h3><p class="note">{{.Note}}</p><div class="box" style="height: {{.Height}}px"><canvas id="{{.ID}}" role="img" aria-label="{{.Title}}"></canvas></div></div>{{end}}`
