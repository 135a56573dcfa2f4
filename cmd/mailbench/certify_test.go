package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/campaign/certify"
	"github.com/mailbench/mailbench/internal/campaign/sizing"
)

// writeResult writes a certify or size result as its --json would.
func writeResult(t *testing.T, name string, write func(*os.File) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeCertification is a certification without runs whose checks are
// given: enough for `report` to render it.
func fakeCertification(checks ...certify.Check) *certify.Result {
	return &certify.Result{
		Name: "fake", Config: "fake.toml", BaseRate: 12000, PerUserHour: 4.8,
		Rules: certify.DefaultRules(), Checks: checks, Median: -1,
		Disclosure: certify.Disclosure{MailbenchVersion: "test", ConfigHash: strings.Repeat("ab", 32)},
	}
}

func fakeSizing(found bool) *sizing.Result {
	r := &sizing.Result{
		Name: "fake", Config: "fake.toml", Embedded: true, PerUserHour: 4.8, Precision: 15,
		Budget: time.Hour, Start: 400, Low: 400, High: 450, Converged: true, Confirmed: found, Bounding: -1,
	}
	if !found {
		r.Stopped = "the limit of 8 runs was reached"
	}
	return r
}

// `mailbench certify` and `mailbench size`: usage and config errors exit 2
// before any run starts; `report` renders their JSON with the exit code of
// the verdict; the help of both states the exit codes.
func TestCertifyAndSizeCLI(t *testing.T) {
	badFile := filepath.Join(badConfigDir, "bad-duration.toml")
	nodir := filepath.Join(t.TempDir(), "no", "such", "dir")
	certifiable := writeResult(t, "certifiable.json", func(f *os.File) error {
		return fakeCertification(certify.Check{Rule: certify.RuleWarmup, Pass: true, Detail: "5m0s"}).WriteJSON(f)
	})
	broken := writeResult(t, "broken.json", func(f *os.File) error {
		return fakeCertification(
			certify.Check{Rule: certify.RuleWarmup, Pass: true, Detail: "5m0s"},
			certify.Check{Rule: certify.RuleUsers, Pass: false, Detail: "load.sessions_per_user_hour = 6 (must be 4.8)"},
		).WriteJSON(f)
	})
	found := writeResult(t, "found.json", func(f *os.File) error { return fakeSizing(true).WriteJSON(f) })
	notFound := writeResult(t, "notfound.json", func(f *os.File) error { return fakeSizing(false).WriteJSON(f) })

	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout string
		wantStderr string
	}{
		{"size: precision below 0", []string{"size", "quick", "--precision", "-5"}, exitUsage, "", "precision"},
		{"size: precision above 100", []string{"size", "quick", "--precision", "150"}, exitUsage, "", "precision"},
		{"size: precision not a number", []string{"size", "quick", "--precision", "five"}, exitUsage, "", "precision"},
		{"size: --confirm -1", []string{"size", "quick", "--confirm", "-1"}, exitUsage, "", "--confirm"},
		{"size: negative budget", []string{"size", "quick", "--budget", "-1h"}, exitUsage, "", "budget"},
		{"size: negative start", []string{"size", "quick", "--start", "-10"}, exitUsage, "", "start"},
		{"size: bad config", []string{"size", badFile}, exitUsage, "", "bad-duration.toml:5:"},
		{"size: missing config", []string{"size", "no-such-config"}, exitUsage, "", "not a shipped config"},
		{"size: --json into no directory", []string{"size", "quick", "--json", filepath.Join(nodir, "x.json")}, exitUsage, "", "--json"},
		{"certify: bad config", []string{"certify", badFile}, exitUsage, "", "bad-duration.toml:5:"},
		{"certify: missing config", []string{"certify", "no-such-config"}, exitUsage, "", "not a shipped config"},
		{"certify: unknown flag", []string{"certify", "quick", "--precision", "5"}, exitUsage, "", "precision"},
		{"certify: --json into no directory", []string{"certify", "quick", "--json", filepath.Join(nodir, "x.json")}, exitUsage, "", "--json"},
		{"certify: --html into no directory", []string{"certify", "quick", "--html", filepath.Join(nodir, "x.html")}, exitUsage, "", "--html"},
		{"report: a certifiable certification", []string{"report", certifiable}, exitCompliant, "CERTIFIABLE", ""},
		{"report: a broken rule", []string{"report", broken}, exitNotCompliant, "NOT CERTIFIABLE", ""},
		{"report: a capacity found", []string{"report", found}, exitCompliant, "400 sessions/hour", ""},
		{"report: no capacity", []string{"report", notFound}, exitNotCompliant, "limit of 8 runs", ""},
		{"certify --help states the exit codes", []string{"certify", "--help"}, exitCompliant, "Exit codes: 0 certifiable, 1 not certifiable, 2 usage", ""},
		{"size --help states the exit codes", []string{"size", "--help"}, exitCompliant, "Exit codes: 0 a capacity was found", ""},
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
	// The broken rule is named in the rendering.
	_, stdout, _ := runMain("report", broken)
	if !strings.Contains(stdout, certify.RuleUsers) {
		t.Errorf("report of a broken certification does not name %q:\n%s", certify.RuleUsers, stdout)
	}
}
