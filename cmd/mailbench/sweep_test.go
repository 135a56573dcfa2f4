package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSweepAndSideBySideExitCodes covers the flags of `sweep` that are
// rejected before any run, and `report --side-by-side`.
func TestSweepAndSideBySideExitCodes(t *testing.T) {
	good, _ := writeReport(t, "good", 200, 10*time.Millisecond)
	good2, _ := writeReport(t, "good2", 100, 20*time.Millisecond)
	slow, _ := writeReport(t, "slow", 200, 2*time.Minute)
	badFile := filepath.Join(badConfigDir, "bad-duration.toml")
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout string
		wantStderr string
	}{
		{"sweep zero level", []string{"sweep", "quick", "--levels", "0,100"}, exitUsage, "", "positive percentage"},
		{"sweep duplicate level", []string{"sweep", "quick", "--levels", "100,100"}, exitUsage, "", "twice"},
		{"sweep not a number", []string{"sweep", "quick", "--levels", "80,abc"}, exitUsage, "", "abc"},
		{"sweep zero iterations", []string{"sweep", "quick", "--iterations", "0"}, exitUsage, "", "out of range: must be 1 to 100"},
		{"sweep bad config", []string{"sweep", badFile}, exitUsage, "", "bad-duration.toml:5:"},
		{"sweep missing config", []string{"sweep", "no-such-config"}, exitUsage, "", "not a shipped config"},
		{"side by side compliant", []string{"report", "--side-by-side", good, good2}, exitCompliant, "good2", ""},
		{"side by side with a failing run", []string{"report", "--side-by-side", good, slow}, exitNotCompliant, "slow: failing: ", ""},
		{"side by side with --json", []string{"report", "--side-by-side", good, good2, "--json", filepath.Join(t.TempDir(), "x.json")}, exitUsage, "", "--side-by-side"},
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
}
