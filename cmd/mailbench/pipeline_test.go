package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestJSONToStdout: `run CONFIG --json -` writes the JSON report, and
// only it, on stdout (a pipeline can parse it), and moves the text report
// to stderr; the exit code is the run's.
func TestJSONToStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole run of a few seconds")
	}
	cfg := filepath.Join(t.TempDir(), "tiny.toml")
	if err := os.WriteFile(cfg, []byte(`name = "tiny"
[target]
embedded = true
[users]
count = 5
password = "sekFile"
[load]
sessions_per_hour = 3600
op_timeout = "2s"
think_time = "10ms"
[phases]
warmup = "1s"
measurement = "2s"
rampdown = "2s"
settle = "1s"
[mailboxes]
inbox_messages = 3
folder_messages_min = 1
folder_messages_max = 1
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runMain("run", cfg, "--json", "-", "-q", "--no-verdict-exit")
	if code != exitCompliant && code != exitNotCompliant {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%.500s", err, stdout)
	}
	if doc["name"] != "tiny" || doc["schema_version"] == nil {
		t.Errorf("the JSON on stdout is not the run's report: name %v", doc["name"])
	}
	if !strings.Contains(stderr, "Summary Results") || !strings.Contains(stderr, "Verdict:") {
		t.Errorf("the text report is not on stderr:\n%s", stderr)
	}
	if strings.Contains(stdout+stderr, "sekFile") {
		t.Error("a password in the output")
	}
}

// TestHelpHasExamplesAndDefaults: every command's --help has examples that
// name shipped configs (which work wherever the binary is installed), not
// repository paths, and shows the default of every flag that has one.
func TestHelpHasExamplesAndDefaults(t *testing.T) {
	for _, cmd := range []string{"run", "check", "sink", "report", "compare-tls", "sweep", "init", "clean", "certify", "size", "manage", "demo-target", "version"} {
		t.Run(cmd, func(t *testing.T) {
			_, stdout, stderr := runMain(cmd, "--help")
			help := stdout + stderr
			if !strings.Contains(help, "Examples:") {
				t.Errorf("%s --help has no examples", cmd)
			}
			if strings.Contains(help, "configs/") {
				t.Errorf("%s --help names a repository path (configs/...), which fails once installed:\n%s", cmd, help)
			}
		})
	}
	_, stdout, _ := runMain("size", "--help")
	for _, want := range []string{"(default: 5)", "(default: 2)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("size --help does not show %q", want)
		}
	}
}

// TestMaxRegression: report --side-by-side --max-regression exits 1 when a
// later run's p95 regresses beyond the limit (and beyond the noise), and 0
// when the change stays within it.
func TestMaxRegression(t *testing.T) {
	base, _ := writeReport(t, "release-1", 200, 10*time.Millisecond)
	slower, _ := writeReport(t, "release-2", 200, 20*time.Millisecond)
	close, _ := writeReport(t, "release-3", 200, 10500*time.Microsecond)
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"p95 doubled", []string{base, slower, "--max-regression", "p95=10%"}, exitNotCompliant,
			[]string{"Regressions against release-1", "release-2: IMAP Connect p95 20.02 ms against 10.01 ms (+100.0%, limit +10%)", "(+100.0%) *"}},
		{"p95 up 5%", []string{base, close, "--max-regression", "p95=10%,errors=0.1%,rate=2%"}, exitCompliant,
			[]string{"No regression against release-1"}},
		{"bad limits", []string{base, slower, "--max-regression", "latency=5%"}, exitUsage, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runMain(append([]string{"report", "--side-by-side"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			for _, w := range c.wants {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestREADMESampleMatchesTheReport: every line of the README's sample
// output (between <!-- sample:begin --> and <!-- sample:end -->, "..."
// lines aside) has the form of a line of a real report: the same labels
// and words, numbers where it has numbers, in the same order. The sample
// cannot drift from what mailbench prints.
func TestREADMESampleMatchesTheReport(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole run of a few seconds")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- sample:begin -->")
	sample, _, ok2 := strings.Cut(rest, "<!-- sample:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- sample:begin --> ... <!-- sample:end --> block")
	}
	cfg := filepath.Join(t.TempDir(), "tiny.toml")
	if err := os.WriteFile(cfg, []byte("name = \"tiny\"\n[target]\nembedded = true\n[users]\ncount = 5\npassword = \"sekFile\"\n"+
		"[load]\nsessions_per_hour = 3600\nop_timeout = \"2s\"\nthink_time = \"10ms\"\n[phases]\nwarmup = \"1s\"\nmeasurement = \"2s\"\nrampdown = \"2s\"\nsettle = \"1s\"\n"+
		"[mailboxes]\ninbox_messages = 3\nfolder_messages_min = 1\nfolder_messages_max = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, stderr := runMain("run", cfg, "-q", "--no-verdict-exit")
	if !strings.Contains(out, "Summary Results") {
		t.Fatalf("no report:\n%s", stderr)
	}
	number := regexp.MustCompile(`[0-9][0-9,.]*`)
	cell := regexp.MustCompile(`^(?:[0-9][0-9,.]*%?|-)$`)
	lines := strings.Split(out, "\n")
	at := 0
	for _, l := range strings.Split(sample, "\n") {
		l = strings.TrimRight(l, " ")
		if l == "" || l == "..." || strings.HasPrefix(l, "```") {
			continue
		}
		// The sample's words, with any number standing for any number (a
		// cell may also be "-": no operations in a run this short), PASS
		// for PASS or FAIL, and any run of spaces for any run of spaces.
		// The verdict and result lines are checked by their label.
		var pat strings.Builder
		pat.WriteString(`^\s*`)
		fields := strings.Fields(l)
		if fields[0] == "Verdict:" || fields[0] == "Result:" {
			fields = fields[:1]
		}
		for i, f := range fields {
			if i > 0 {
				pat.WriteString(`\s+`)
			}
			switch {
			case cell.MatchString(f):
				pat.WriteString(`(?:[0-9][0-9,.]*%?|-)`)
				continue
			case f == "PASS" || f == "FAIL":
				pat.WriteString(`(?:PASS|FAIL)`)
				continue
			}
			last := 0
			for _, m := range number.FindAllStringIndex(f, -1) {
				pat.WriteString(regexp.QuoteMeta(f[last:m[0]]) + `[0-9][0-9,.]*`)
				last = m[1]
			}
			pat.WriteString(regexp.QuoteMeta(f[last:]))
		}
		if len(fields) < len(strings.Fields(l)) {
			pat.WriteString(`.*`)
		}
		re := regexp.MustCompile(pat.String() + `\s*$`)
		found := false
		for ; at < len(lines); at++ {
			if re.MatchString(lines[at]) {
				found = true
				at++
				break
			}
		}
		if !found {
			t.Errorf("README sample line %q matches no later line of a real report", l)
			return
		}
	}
}
