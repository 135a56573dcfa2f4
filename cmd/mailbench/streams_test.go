package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shortQuickFile writes the shipped quick workload with a 2-second window
// (and phases to match) for runs of realMain.
func shortQuickFile(t *testing.T, users int) string {
	t.Helper()
	data, err := os.ReadFile("../../configs/quick.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for old, new := range map[string]string{
		`warmup = "10s"`: `warmup = "1s"`, `measurement = "40s"`: `measurement = "2s"`,
		`rampdown = "10s"`: `rampdown = "2s"`, `settle = "5s"`: `settle = "1s"`,
		`op_timeout = "10s"`: `op_timeout = "2s"`, "count = 20 ": "count = " + map[bool]string{true: "1 ", false: "20 "}[users == 1],
	} {
		if !strings.Contains(s, old) {
			t.Fatalf("quick.toml has no %q", old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	path := filepath.Join(t.TempDir(), "short.toml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunStreams: a run that reports puts its --results and --timeseries
// files in place; a run that fails (here: more shards than users) leaves
// an earlier file as it was and keeps what it wrote beside it.
func TestRunStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two short runs")
	}
	dir := t.TempDir()
	results, series := filepath.Join(dir, "ops.csv"), filepath.Join(dir, "series.csv")
	code, _, stderr := runMain("run", shortQuickFile(t, 20), "-q", "--results", results, "--timeseries", series, "--timeseries-interval", "1s")
	if code != exitCompliant && code != exitNotCompliant {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, p := range []string{results, series} {
		b, err := os.ReadFile(p)
		if err != nil || strings.Count(string(b), "\n") < 2 {
			t.Errorf("%s: %d bytes, %v: want the header and lines", p, len(b), err)
		}
		if _, err := os.Stat(p + ".partial"); err == nil {
			t.Errorf("%s.partial left by a run that reported", p)
		}
	}

	if err := os.WriteFile(results, []byte("an earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runMain("run", shortQuickFile(t, 1), "-q", "--results", results, "--shard", "1/2", "--start-at", time.Now().Add(time.Second).UTC().Format(time.RFC3339))
	if code != exitRunFailed {
		t.Fatalf("a run of 2 shards over 1 user: exit %d, want %d: %s", code, exitRunFailed, stderr)
	}
	if b, _ := os.ReadFile(results); string(b) != "an earlier run\n" {
		t.Errorf("the failed run changed the earlier results: %q", b)
	}
	if _, err := os.Stat(results + ".partial"); err != nil {
		t.Errorf("what the failed run wrote is not kept: %v", err)
	}
}
