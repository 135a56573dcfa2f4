package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

const badConfigDir = "../../workload/testdata/config/bad"

// writeReport writes a JSON report of a run in which every function
// (the delivery rows too) did n operations of duration d each, and returns its path and whether
// the evaluated table is compliant.
// edit, if any, changes the run before it is evaluated and written (a
// shard of another run is another generator's: same name, its own start).
func writeReport(t *testing.T, name string, n int, d time.Duration, edit ...func(*report.Run)) (string, bool) {
	t.Helper()
	rules := compliance.DefaultRules()
	s := metrics.NewStats(rules.Limits())
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, f := range measure.AllFunctions {
		for range n {
			s.Observe(measure.Observation{Function: f, Start: start, Duration: d})
		}
	}
	r := &report.Run{
		Tool: "mailbench", Version: "test", Name: name, Seed: 1,
		Started: start, Ended: start.Add(3 * time.Minute),
		Warmup: report.Duration(time.Minute), Measurement: report.Duration(time.Minute), Rampdown: report.Duration(time.Minute),
		Target:    report.Target{IMAP: "127.0.0.1:1143", SMTP: "127.0.0.1:2525"},
		Functions: s.Snapshot(),
	}
	for _, e := range edit {
		e(r)
	}
	r.Evaluate(rules)
	path := filepath.Join(t.TempDir(), name+".json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := report.WriteJSON(f, r); err != nil {
		t.Fatal(err)
	}
	return path, r.Table.Compliant
}

func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = realMain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExitCodes(t *testing.T) {
	t.Setenv("MAILBENCH_PASSWORD", "test-password") // enterprise.toml takes it from there
	good, ok := writeReport(t, "good", 200, 10*time.Millisecond)
	if !ok {
		t.Fatal("the fast run's table is not compliant")
	}
	shardOf := func(name string, k int) func(*report.Run) {
		return func(r *report.Run) { r.Name, r.Started = name, r.Started.Add(time.Duration(k)*time.Second) }
	}
	good2, _ := writeReport(t, "good2", 100, 20*time.Millisecond, shardOf("good", 1))
	slow, ok := writeReport(t, "slow", 200, 2*time.Minute)
	if ok {
		t.Fatal("the slow run's table is compliant")
	}
	slowShard, _ := writeReport(t, "slow-shard", 200, 2*time.Minute, shardOf("good", 2))
	merged := filepath.Join(t.TempDir(), "merged.json")
	page := filepath.Join(t.TempDir(), "good.html")
	badCertify := filepath.Join(t.TempDir(), "certify.json")
	if err := os.WriteFile(badCertify, []byte(`{"schema":"mailbench-certify","schema_version":99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	nodir := filepath.Join(t.TempDir(), "no", "such", "dir")
	badFile := filepath.Join(badConfigDir, "bad-duration.toml")

	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout string // substring, if set
		wantStderr string // substring, if set
	}{
		{"check shipped config by name", []string{"check", "quick"}, exitCompliant, "timed functions", ""},
		{"check shipped config file", []string{"check", "../../configs/enterprise.toml"}, exitCompliant, "timed functions", ""},
		{"check bad file", []string{"check", badFile}, exitUsage, "", "bad-duration.toml:5:"},
		{"check missing file", []string{"check", filepath.Join(t.TempDir(), "nope.toml")}, exitUsage, "", "no such file"},
		{"check without a file", []string{"check"}, exitUsage, "", "expected"},
		{"unknown flag", []string{"check", "--no-such-flag", "quick"}, exitUsage, "", "no-such-flag"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", "frobnicate"},
		{"no command: the usage on stderr", []string{}, exitUsage, "", "Usage: mailbench <command>"},
		{"version", []string{"version"}, exitCompliant, "mailbench ", ""},
		{"--version", []string{"--version"}, exitCompliant, "mailbench ", ""},
		{"run bad config", []string{"run", badFile}, exitUsage, "", "bad-duration.toml:5:"},
		{"run missing config", []string{"run", "no-such-config"}, exitUsage, "", "not a shipped config"},
		{"run, a rate that schedules no session", []string{"run", "quick", "--rate", "1e-300"}, exitUsage, "", "at least one is needed"},
		{"run, a window that schedules no session", []string{"run", "quick", "--measurement", "1ns"}, exitUsage, "", "at least one is needed"},
		{"sink, a timeout no MTA meets", []string{"sink", "--timeout", "1ns"}, exitUsage, "", "--timeout 1ns: out of range"},
		{"run, two outputs on one path", []string{"run", "quick", "--json", merged + ".same", "--results", merged + ".same"}, exitUsage, "", "--json and --results name the same file"},
		{"run, --html and --timeseries on one path", []string{"run", "quick", "--html", page, "--timeseries", page}, exitUsage, "", "--html and --timeseries name the same file"},
		{"run, an output that is a directory", []string{"run", "quick", "--json", t.TempDir()}, exitUsage, "", "is a directory"},
		{"report compliant", []string{"report", good}, exitCompliant, "good", ""},
		{"report not compliant", []string{"report", slow}, exitNotCompliant, "slow", ""},
		{"report merge", []string{"report", good, good2, "--json", merged}, exitCompliant, "", ""},
		{"report merge with a failing shard", []string{"report", good, slowShard}, exitNotCompliant, "", ""},
		{"report missing file", []string{"report", filepath.Join(t.TempDir(), "nope.json")}, exitUsage, "", "nope.json"},
		{"report not JSON", []string{"report", badFile}, exitUsage, "", "bad-duration.toml"},
		{"report --html", []string{"report", good, "--html", page}, exitCompliant, "good", ""},
		{"report of a certification is read as one", []string{"report", badCertify}, exitUsage, "", "certify.json"},
		{"check prints the memory budget", []string{"check", "quick"}, exitCompliant, "available:", ""},
		{"run --metrics-listen on a bad address", []string{"run", "--metrics-listen", "127.0.0.1:-1"}, exitUsage, "", "--metrics-listen"},
		// Output paths are checked before any work starts: a run that
		// could not write its report fails at once, not after the run.
		{"run --json into no directory", []string{"run", "--json", filepath.Join(nodir, "x.json")}, exitUsage, "", "--json"},
		{"run --html into no directory", []string{"run", "--html", filepath.Join(nodir, "x.html")}, exitUsage, "", "--html"},
		{"run --results into no directory", []string{"run", "--results", filepath.Join(nodir, "x.csv")}, exitUsage, "", "--results"},
		{"sweep --json into no directory", []string{"sweep", "--json", filepath.Join(nodir, "x.json")}, exitUsage, "", "--json"},
		{"report --html into no directory", []string{"report", good, "--html", filepath.Join(nodir, "x.html")}, exitUsage, "", "--html"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(tt.args...)
			if code != tt.want {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.want, stdout, stderr)
			}
			if tt.wantStdout != "" && !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantStdout, stdout)
			}
			if tt.wantStderr != "" && !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}

	// The HTML page was written, whole.
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "</html>") {
		t.Errorf("report --html wrote %d bytes, %v", len(b), err)
	}

	// The merged report was written and holds the operations of both shards.
	f, err := os.Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range measure.AllFunctions {
		if fs := run.Functions[fn]; fs == nil || fs.Operations != 300 {
			t.Errorf("merged %q: %+v, want 300 operations", fn, fs)
		}
	}
}

// TestCheckBadConfigs checks every bad config of the workload package: exit
// 2 and every expected file:line message on stderr.
func TestCheckBadConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(badConfigDir, "*.err"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad configs in %s (%v)", badConfigDir, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runMain("check", strings.TrimSuffix(file, ".err")+".toml")
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
				if !strings.Contains(stderr, line) {
					t.Errorf("stderr lacks %q:\n%s", line, stderr)
				}
			}
		})
	}
}

func TestSubcommandHelp(t *testing.T) {
	for _, cmd := range []string{"run", "check", "sink", "init", "clean", "report", "compare-tls", "sweep"} {
		t.Run(cmd, func(t *testing.T) {
			code, stdout, stderr := runMain(cmd, "--help")
			if code != 0 {
				t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "mailbench "+cmd) {
				t.Errorf("help lacks examples of %q:\n%s", cmd, stdout)
			}
		})
	}
}

func TestExitCodeMapping(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitCompliant},
		{"not compliant", fmt.Errorf("run: %w", errNotCompliant), exitNotCompliant},
		{"usage", usage(errors.New("--x")), exitUsage},
		{"usage wrapped", fmt.Errorf("compare: %w", usage(errors.New("bad"))), exitUsage},
		{"orchestrator config error", &orchestrator.UsageError{Err: errors.New("ca_file")}, exitUsage},
		{"could not run", couldNotRun(errors.New("listen")), exitRunFailed},
		{"partial", errPartial, exitRunFailed},
		// A run whose report is no result for the server (could not run,
		// GENERATOR-BOUND) exits 3, as one that could not be carried out.
		{"no result for the server", noResult("GENERATOR-BOUND: sessions started late"), exitRunFailed},
		{"no result, wrapped", fmt.Errorf("run: %w", noResult("could not run: refused")), exitRunFailed},
		{"unclassified", errors.New("boom"), exitRunFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(tt.err, io.Discard); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// `mailbench version` prints the version every report carries.
func TestVersionIsTheReports(t *testing.T) {
	code, stdout, _ := runMain("version")
	if want := "mailbench " + orchestrator.Version + "\n"; code != 0 || stdout != want {
		t.Errorf("version: exit %d, %q; want 0, %q", code, stdout, want)
	}
}

// TestCheckCountsUsersFile: check estimates memory with a users file's
// users, as run does, and refuses (exit 2) the plan run would refuse; the
// same config with a small file passes.
func TestCheckCountsUsersFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "user%d,pw\n", i)
		}
		users := filepath.Join(dir, name+".csv")
		if err := os.WriteFile(users, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, name+".toml")
		toml := "name = \"big\"\n[target]\nembedded = true\n[users]\nfile = \"" + users + "\"\n[load]\nsessions_per_hour = 3600\n"
		if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if code, out, errOut := runMain("check", write("small", 10)); code != exitCompliant {
		t.Fatalf("check with 10 users: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut := runMain("check", write("big", 1_000_000))
	if code != exitUsage || !strings.Contains(errOut, "the run needs an estimated") {
		t.Fatalf("check with 1,000,000 users: exit %d, stderr %q; want exit 2 and run's memory refusal", code, errOut)
	}
}
