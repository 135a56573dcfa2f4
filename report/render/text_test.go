package render

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

// TestTextEscapesControls: words from a server or a report file (here a
// warning and the run's name, as a tampered JSON could carry them) reach
// the terminal with their control bytes escaped; the report's own
// characters (≥, …) pass whole.
func TestTextEscapesControls(t *testing.T) {
	r := &report.Run{Name: "evil\x1b]2;title\x07", Warnings: []string{"server said \x1b[2J\rhidden ≥ …"}}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\r") {
		t.Errorf("raw control bytes in the text report:\n%q", out)
	}
	for _, want := range []string{`evil\x1b]2;title\x07`, `\x1b[2J\x0dhidden ≥ …`} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
}

// TestPopulationText: the population section says, per group, planned
// against counted (the merge of two shards' populations, as
// report's TestPopulationMerge merges them).
func TestPopulationText(t *testing.T) {
	m := &report.PopulationSummary{Groups: []report.PopulationGroup{
		{Name: "spec/spec", Users: 10, PlannedSessionsPerHour: 48},
		{Name: "heavy/desktop", Users: 40, Client: "desktop", PlannedConnections: 80, PlannedReceivedPerHour: 400, Held: 79, Connects: 80, Attempts: 81, Resyncs: 40, NewMail: 58, Opened: 45, Removed: 19, Forgotten: 2},
		{Name: "light/mobile", Users: 5, Client: "mobile", PlannedConnections: 4.5, Held: 5, Connects: 7, Attempts: 7},
	}}
	var sb strings.Builder
	writePopulation(&sb, m)
	for _, want := range []string{
		"spec/spec: 10 users, SPEC's sessions (planned 48.0/hour)",
		"heavy/desktop: 40 users; connections held 79 at the end of the window (planned 80.0 on average)",
		"81 attempts", "2 actions forgotten",
	} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, sb.String())
		}
	}
}

func TestWriteTextGolden(t *testing.T) {
	tests := []struct {
		name string
		run  *report.Run
	}{
		{"compliant.txt.golden", compliantRun()},
		{"partial_failing.txt.golden", failingRun()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tt.run); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
		// The same report at 80 columns: the compact table.
		name := strings.Replace(tt.name, ".txt.", ".80.txt.", 1)
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTextWidth(&b, tt.run, 80); err != nil {
				t.Fatal(err)
			}
			golden(t, name, b.Bytes())
		})
	}
}

// TestFixtures pins the properties the golden files are meant to show, so
// that a wrong -update cannot silently bless a wrong verdict.
func TestFixtures(t *testing.T) {
	c := compliantRun()
	if !c.Table.Compliant || len(c.Table.Rows) != 16 {
		t.Errorf("compliant fixture: Compliant=%v rows=%d failing=%q", c.Table.Compliant, len(c.Table.Rows), c.Table.Failing)
	}
	f := failingRun()
	want := []string{string(measure.IMAPExpunge), string(measure.IMAPLsub), compliance.ErrorRateName}
	if !slices.Equal(f.Table.Failing, want) {
		t.Errorf("failing fixture: Failing = %q, want %q", f.Table.Failing, want)
	}
	if e := f.Table.Errors; e.Errors*100 != e.Operations {
		t.Errorf("failing fixture: error rate %d/%d is not exactly 1%%", e.Errors, e.Operations)
	}
	var b bytes.Buffer
	if err := WriteText(&b, f); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, s := range []string{
		"PARTIAL RUN: interrupted by SIGINT",
		"Verdict: NONE, no verdict (partial: interrupted by SIGINT)",
		"Failing so far (a partial run: no verdict; rows without operations left out):",
		"95.00% is not >95%", "1.00% is not <1%",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("text report lacks %q", s)
		}
	}
	// A partial run names no row that merely had no operations yet.
	if strings.Contains(text, "no operations") || strings.Contains(text, "NOT COMPLIANT") {
		t.Errorf("the partial run's text names rows without operations or a verdict:\n%s", text)
	}
	b.Reset()
	if err := WriteText(&b, c); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "\nVerdict: COMPLIANT\n") || strings.Contains(b.String(), "PARTIAL") {
		t.Errorf("compliant text report: wrong verdict or banner:\n%s", b.String())
	}
}

func FuzzReadJSON(f *testing.F) {
	for _, r := range []*report.Run{failingRun(), {}} {
		var b bytes.Buffer
		if err := report.WriteJSON(&b, r); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"schema_version":1,"functions":[{"function":"x","histogram":"HISTFAAAAA=="}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := report.ReadJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever was accepted renders, and round-trips.
		if err := WriteText(new(bytes.Buffer), r); err != nil {
			t.Fatalf("WriteText: %v", err)
		}
		var b bytes.Buffer
		if err := report.WriteJSON(&b, r); err != nil {
			return // e.g. a NaN cannot be written; acceptable
		}
		first := slices.Clone(b.Bytes())
		back, err := report.ReadJSON(&b)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		var b2 bytes.Buffer
		if err := report.WriteJSON(&b2, back); err != nil || !bytes.Equal(first, b2.Bytes()) {
			t.Fatalf("second round trip differs (%v)", err)
		}
	})
}

// TestWriteTextTableWidth: the terminal report fits 120 columns, and 80
// when laid out for 80,
// long function names wrapped; the JSON keeps them whole.
func TestWriteTextTableWidth(t *testing.T) {
	for name, width := range map[string]int{"compliant": 120, "partial_failing": 120, "compliant.80": 80, "partial_failing.80": 80} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".txt.golden"))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if !strings.Contains(text, "Summary Results") {
			t.Fatalf("%s: no table", name)
		}
		// The whole terminal report, the table and every line under it.
		for _, line := range strings.Split(text, "\n") {
			if n := len([]rune(strings.TrimRight(line, " "))); n > width {
				t.Errorf("%s: a line of %d columns: %q", name, n, line)
			}
		}
	}
	if got := wrapName(string(measure.IMAPFetchRange), maxNameWidth); strings.Join(got, "") != string(measure.IMAPFetchRange) {
		t.Errorf("wrapName lost characters: %q", got)
	}
}

// TestSchema1Reports reads reports of schema version 1 that real runs
// wrote (testdata/schema1, kept as they were written: a run with [clients]
// and a delivery check, a shard of a run with an external sink, a run that
// could not run). Written back, they hold the same document: the same keys
// in the same order and the same values, except derived figures, which may
// differ in the last digits (they are computed from the microseconds the
// file holds, and these files' writer computed them from nanoseconds). Written back again,
// they are the same bytes, and their text is as it was (the .txt golden
// files beside them). Together they hold every top-level section of the
// schema.
func TestSchema1Reports(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "schema1", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema 1 reports: %v", err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r, err := report.ReadJSON(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("ReadJSON() = %v", err)
			}
			var out bytes.Buffer
			if err := report.WriteJSON(&out, r); err != nil {
				t.Fatal(err)
			}
			if !sameDocument(out.Bytes(), data) {
				t.Errorf("WriteJSON(ReadJSON(%s)) differs from the file:\n%s", file, firstDifference(out.String(), string(data)))
			}
			again, err := report.ReadJSON(bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatalf("ReadJSON(WriteJSON()) = %v", err)
			}
			var out2 bytes.Buffer
			if err := report.WriteJSON(&out2, again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out2.Bytes(), out.Bytes()) {
				t.Errorf("a report read back does not write the same bytes:\n%s", firstDifference(out2.String(), out.String()))
			}
			var text bytes.Buffer
			if err := WriteText(&text, r); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("schema1", strings.TrimSuffix(filepath.Base(file), ".json")+".txt.golden"), text.Bytes())
			// At 80 columns every line fits.
			var narrow bytes.Buffer
			if err := WriteTextWidth(&narrow, r, 80); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("schema1", strings.TrimSuffix(filepath.Base(file), ".json")+".80.txt.golden"), narrow.Bytes())
			for _, line := range strings.Split(narrow.String(), "\n") {
				if n := len([]rune(line)); n > 80 {
					t.Errorf("at 80 columns, a line of %d: %q", n, line)
				}
			}
			for _, key := range topLevelKeys(t, data) {
				seen[key] = true
			}
		})
	}
	for _, key := range []string{"shard", "remote_pending", "clients", "server_clock", "delivery_timing", "could_not_run",
		"timeline", "connect", "delivery", "delivery_checks", "generator", "warnings"} {
		if !seen[key] {
			t.Errorf("no schema 1 report has %q", key)
		}
	}
}

// TestServerSection: the text report lists each source's figures and the
// failing sources; a criterion above its max fails the run with its own
// row, one never measured too, and one within passes.
func TestServerSection(t *testing.T) {
	r := compliantRun()
	r.Server = serverFixture()
	r.ServerCriteria = []report.ServerCriterion{{Figure: "host.cpu_percent", Max: 80}, {Figure: "dovecot.cpu_cores", Max: 1.5}, {Figure: "queue", Max: 100}}
	r.Evaluate(r.Table.Rules())
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, s := range []string{
		"Server (observed beside the run every 10 s",
		"host        cpu_percent 81.5 / 97.2%, disk_util_percent 22.0 / 40.0%",
		"dovecot     cpu_cores 1.10 / 1.60 cores, rss_bytes 210.0 MiB / 230.0 MiB",
		"mailbench   cpu_cores 0.40 / 0.50 cores (the generator itself",
		"queue       3 of 60 samples failed (last: no answer within 2s",
		"Server host.cpu_percent                  FAIL  mean 81.50 is above 80",
		"Server dovecot.cpu_cores                 PASS  mean 1.10 is at most 1.50",
		"  - Server queue: never measured",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
	if r.Table.Compliant || !strings.Contains(strings.Join(r.Table.Failing, ","), "Server host.cpu_percent") {
		t.Errorf("compliant %v, failing %q", r.Table.Compliant, r.Table.Failing)
	}
	if got := r.ServerLine(); got != "host CPU 82% of 2 cores (peak 97%); dovecot 1.10 cores; mailbench 0.40 cores; disk 22% busy (peak 40%)" {
		t.Errorf("ServerLine %q", got)
	}
	// The host's cores beyond the named processes and mailbench are said
	// as the rest, not left to be read as the server's.
	rest := compliantRun()
	rest.Server = serverFixture()
	rest.Server.Figures = append(rest.Server.Figures, metrics.ServerFigure{Name: "host.cpu_cores", Unit: "cores", Mean: 1.63, Peak: 1.94, Samples: 60})
	if got := rest.ServerLine(); !strings.Contains(got, "mailbench 0.40 cores; the rest 0.13 cores (kernel threads, other processes; derived: host − the above)") {
		t.Errorf("ServerLine %q", got)
	}
	// Within its max, the criteria leave the verdict alone.
	c := compliantRun()
	c.Server = serverFixture()
	c.ServerCriteria = []report.ServerCriterion{{Figure: "host.cpu_percent", Max: 90}}
	c.Evaluate(c.Table.Rules())
	if !c.Table.Compliant {
		t.Errorf("failing %q", c.Table.Failing)
	}
	// The JSON carries them back.
	var j bytes.Buffer
	if err := report.WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&j)
	if err != nil {
		t.Fatal(err)
	}
	if back.Server == nil || len(back.Server.Figures) != 5 || len(back.ServerCriteria) != 3 || back.ServerCriteria[0].Pass {
		t.Errorf("read back: %+v %+v", back.Server, back.ServerCriteria)
	}
}

func TestTimelineTextGolden(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{{"timeline_short.txt.golden", 4}, {"timeline_grouped.txt.golden", 45}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeTimeline(&buf, sampleTimeline(t, tt.n), DefaultTextWidth)
			out := buf.String()
			lines := strings.Count(out, "\n") - 3 // blank, title, header
			group := (tt.n + maxTextIntervals - 1) / maxTextIntervals
			if want := (tt.n + group - 1) / group; lines > maxTextIntervals || lines != want {
				t.Errorf("%d interval lines for %d intervals", lines, tt.n)
			}
			golden(t, tt.name, buf.Bytes())
		})
	}
	var full bytes.Buffer
	r := compliantRun()
	r.Timeline = sampleTimeline(t, 2)
	if err := WriteText(&full, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(full.String(), "intervals; protocol operations") || !strings.Contains(full.String(), "delivery p95 ms") {
		t.Errorf("WriteText has no Over time section with delivery times apart:\n%s", full.String())
	}
}

// TestTextReportNamesDrift: a run whose IMAP Connect p95 climbs from 0.6 s
// to 3 s across its window says it was not steady; a flat one says nothing.
func TestTextReportNamesDrift(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tops      [2]time.Duration
		wantDrift bool
	}{
		{"climbing", [2]time.Duration{600 * time.Millisecond, 3 * time.Second}, true},
		{"flat", [2]time.Duration{600 * time.Millisecond, 650 * time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := compliantRun()
			for i, top := range tc.tops {
				r.Timeline = append(r.Timeline, mkPoint(tlStart.Add(time.Duration(i)*10*time.Second), 10*time.Second, 10,
					fnPoint(measure.IMAPConnect, 100, 0, top)))
			}
			var buf bytes.Buffer
			if err := WriteText(&buf, r); err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(buf.String(), "Not steady: a p95 rose across the measurement window")
			if got != tc.wantDrift {
				t.Fatalf("not-steady note %v, want %v:\n%s", got, tc.wantDrift, buf.String())
			}
			if got && !strings.Contains(buf.String(), "  - IMAP Connect: p95 570 ms in the first half of the window, 2,850 ms in the second (limit 5 s)") {
				t.Errorf("drift line missing:\n%s", buf.String())
			}
		})
	}
}

// TestTimelineClients: the connected clients of each interval survive the
// JSON, print as "held/target" and "lost" columns (a group: the fewest
// held, the drops summed), merge across shards by adding, and draw the
// HTML chart; a run without clients has none of them.
func TestTimelineClients(t *testing.T) {
	r := compliantRun()
	r.Timeline = sampleTimeline(t, 3)
	for i := range r.Timeline {
		r.Timeline[i].Clients = &metrics.ClientPoint{Target: 500, Held: int64(500 - 10*i), Drops: int64(i)}
	}
	got := roundTrip(t, r)
	if !reflect.DeepEqual(got.Timeline, r.Timeline) {
		t.Fatalf("round trip: %+v", got.Timeline)
	}
	var text bytes.Buffer
	writeTimeline(&text, r.Timeline, DefaultTextWidth)
	for _, want := range []string{"clients held", "lost", "480/500", "490/500"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("Over time lacks %q:\n%s", want, text.String())
		}
	}
	if _, ok := timelineClientsChart(r.Timeline); !ok {
		t.Error("no clients chart for a run with clients")
	}
	plain := sampleTimeline(t, 3)
	if _, ok := timelineClientsChart(plain); ok {
		t.Error("a clients chart for a run without clients")
	}
	var none bytes.Buffer
	writeTimeline(&none, plain, DefaultTextWidth)
	if strings.Contains(none.String(), "clients held") {
		t.Errorf("clients columns without clients:\n%s", none.String())
	}
}

// Operations mailbench cut are reported per function, apart from the
// server's errors, and survive the JSON round trip and a merge.
func TestCancelledReportedApart(t *testing.T) {
	rules := compliance.Rules{MaxErrorPercent: 1, Functions: []compliance.Rule{
		{Function: measure.IMAPConnect, Limit: 5 * time.Second, RequiredPercent: 95},
		{Function: measure.SMTPData, Limit: 5 * time.Second, RequiredPercent: 95},
	}}
	stats := metrics.NewStats(rules.Limits())
	obs := func(f measure.Function, n int, c measure.ErrorClass) {
		for range n {
			stats.Observe(measure.Observation{Function: f, Start: time.Now(), Duration: time.Millisecond, Class: c})
		}
	}
	obs(measure.IMAPConnect, 50, measure.OK)
	obs(measure.SMTPData, 50, measure.OK)
	obs(measure.IMAPConnect, 3, measure.Cancelled)
	obs(measure.SMTPData, 1, measure.Cancelled)
	r := &report.Run{Tool: "mailbench", Functions: stats.Snapshot()}
	r.Evaluate(rules)
	if !r.Table.Compliant || r.Table.Errors.Errors != 0 || r.Table.Errors.Cancelled != 4 {
		t.Fatalf("table %+v: want compliant, 0 errors, 4 cancelled", r.Table.Errors)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if want := "Cancelled by mailbench (not server errors, not in the table): SMTP Data 1, IMAP Connect 3\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	other := *back
	other.Seed++ // another generator's shard: the same run twice is refused
	m, err := report.Merge(back, &other)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Functions[measure.IMAPConnect].Cancelled; got != 6 {
		t.Errorf("merged IMAP Connect cancelled %d, want 6", got)
	}
	if m.Table.Errors.Cancelled != 8 || m.Table.Errors.Errors != 0 || !m.Table.Compliant {
		t.Errorf("merged error row %+v: want 8 cancelled, no errors, compliant", m.Table.Errors)
	}
}
