package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpCommand: `help CMD` prints what `CMD --help` prints, and exits 0.
func TestHelpCommand(t *testing.T) {
	code, out, _ := runMain("help", "check")
	code2, out2, _ := runMain("check", "--help")
	if code != 0 || code2 != 0 || out != out2 || !strings.Contains(out, "Usage: mailbench check") {
		t.Errorf("help check: exit %d, %q; check --help: exit %d", code, out, code2)
	}
}

// TestEveryJSONHelpSaysStdout: each command whose --json takes "-" says
// so in its --help.
func TestEveryJSONHelpSaysStdout(t *testing.T) {
	for _, cmd := range []string{"run", "manage", "report", "certify", "size", "sweep"} {
		_, out, _ := runMain(cmd, "--help")
		if !strings.Contains(strings.Join(strings.Fields(out), " "), "FILE - writes it to stdout") {
			t.Errorf("%s --help does not mention --json -", cmd)
		}
	}
}

// TestCompletionBash runs the bash script's function as bash would on
// "mailbench ch<TAB>" and "mailbench check --pr<TAB>" and "mailbench run
// dove<TAB>".
func TestCompletionBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	code, script, _ := runMain("completion", "bash")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	path := filepath.Join(t.TempDir(), "mailbench.bash")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		words string
		want  string
	}{
		{"mailbench ch", "check"},
		{"mailbench check --pr", "--probe --probe-wait"},
		{"mailbench run dove", "dovecot-postfix dovecot-postfix-tls"},
		{"mailbench completion", "completion"},
	} {
		words := strings.Fields(tt.words)
		cmd := exec.Command("bash", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _mailbench; echo "${COMPREPLY[*]}"`, "x", path)
		cmd.Args = append(cmd.Args, words...)
		cmd.Dir = t.TempDir() // no file names to mix in
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", tt.words, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%s<TAB>: %q, want %q", tt.words, got, tt.want)
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		code, out, _ := runMain("completion", shell)
		if code != 0 || !strings.Contains(out, "check") || !strings.Contains(out, "probe-wait") {
			t.Errorf("completion %s: exit %d", shell, code)
		}
	}
	if code, _, _ := runMain("completion", "tcsh"); code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want %d", code, exitUsage)
	}
}

// TestCheckJSON: check --json prints the plan as JSON on stdout, the
// figures of the config, and nothing else there.
func TestCheckJSON(t *testing.T) {
	code, out, _ := runMain("check", "quick", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var plan struct {
		Schema          string  `json:"schema"`
		SessionsPerHour float64 `json:"sessions_per_hour"`
		LoadOfUsers     float64 `json:"load_of_users"`
		Rules           []struct {
			Function     string  `json:"function"`
			LimitSeconds float64 `json:"limit_seconds"`
		} `json:"rules"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if plan.Schema != "mailbench-plan/1" || plan.SessionsPerHour != 14400 || plan.LoadOfUsers != 3000 || len(plan.Rules) < 14 || plan.Rules[0].LimitSeconds != 5 {
		t.Errorf("plan %+v", plan)
	}
}
