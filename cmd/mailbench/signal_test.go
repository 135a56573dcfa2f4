package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildMailbench builds the command into a temporary directory.
func buildMailbench(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and runs it for seconds")
	}
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT to send")
	}
	bin := filepath.Join(t.TempDir(), "mailbench")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// slowQuick writes the quick workload with a think time of 5 s between
// steps: sessions are in flight when the signals come, so draining takes
// seconds (up to the 10 s ramp-down), time for a second signal.
func slowQuick(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../configs/quick.toml")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^think_time = "[^"]*"`)
	if !re.Match(data) {
		t.Fatal("configs/quick.toml has no think_time line")
	}
	path := filepath.Join(t.TempDir(), "slow.toml")
	if err := os.WriteFile(path, re.ReplaceAll(data, []byte(`think_time = "5s"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// signalRun is `mailbench run CONFIG --measurement 60s` (against the
// embedded target) as a subprocess: its stdout, and its stderr line by line
// on lines.
type signalRun struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string
}

func startSignalRun(t *testing.T, bin, config string, extra ...string) *signalRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // the bound of everything
	t.Cleanup(cancel)
	r := &signalRun{lines: make(chan string, 1000)}
	r.cmd = exec.CommandContext(ctx, bin, append([]string{"run", config, "--measurement", "60s"}, extra...)...)
	r.cmd.Stdout = &r.stdout
	errPipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			r.mu.Lock()
			r.stderr.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	return r
}

// waitLine waits up to d for a stderr line containing s.
func (r *signalRun) waitLine(t *testing.T, s string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("stderr closed before a line with %q:\n%s", s, r.stderrText())
			}
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no stderr line with %q within %v:\n%s", s, d, r.stderrText())
		}
	}
}

func (r *signalRun) stderrText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// wait waits up to d for the process to exit and returns its exit code.
func (r *signalRun) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for range r.lines { // drain, so the reader never blocks
		}
		done <- r.cmd.Wait()
	}()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
		return 0
	case <-time.After(d):
		_ = r.cmd.Process.Kill()
		t.Fatalf("still running %v after the signal:\n%s", d, r.stderrText())
		return -1
	}
}

// The signal contract of every command that runs: the first SIGINT stops,
// drains and writes a report marked PARTIAL (exit 3); the second exits at
// once (exit 3) with one line and no report.
func TestSignals(t *testing.T) {
	bin := buildMailbench(t)
	config := slowQuick(t)

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run("first signal: partial report: "+sig.String(), func(t *testing.T) {
			t.Parallel()
			firstSignal(t, bin, config, sig)
		})
	}

	// SIGKILL in the measurement: the CSV's flushed intervals survive (in
	// FILE.partial), and the --json of an earlier run is left intact.
	t.Run("SIGKILL: earlier intervals and the old report survive", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		jsonPath, csvPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "ops.csv")
		if err := os.WriteFile(jsonPath, []byte(`{"an":"earlier report"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		r := startSignalRun(t, bin, config, "--json", jsonPath, "--results", csvPath, "--timeseries-interval", "1s")
		r.waitLine(t, "embedded target:", 30*time.Second)
		time.Sleep(6 * time.Second) // warm-up is 2 s: several 1 s intervals of the measurement
		if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r.wait(t, 10*time.Second)
		if b, _ := os.ReadFile(jsonPath); string(b) != `{"an":"earlier report"}` {
			t.Errorf("the earlier --json now reads %q", b)
		}
		b, err := os.ReadFile(csvPath + ".partial")
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(b), "\n"); lines < 2 || !strings.HasPrefix(string(b), "start_unix_ns,") {
			t.Errorf("%s holds %d lines after SIGKILL:\n%.300s", csvPath+".partial", lines, b)
		}
	})

	t.Run("second signal: the partial report within a second", func(t *testing.T) {
		t.Parallel()
		r := startSignalRun(t, bin, config)
		r.waitLine(t, "embedded target:", 30*time.Second)
		time.Sleep(2 * time.Second)
		if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		r.waitLine(t, "stopping: no new sessions", 10*time.Second)
		sent := time.Now()
		if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code := r.wait(t, 5*time.Second)
		took := time.Since(sent)
		t.Logf("exited %v after the second signal", took.Round(time.Millisecond))
		if code != exitRunFailed {
			t.Errorf("exit code %d, want %d\nstderr:\n%s", code, exitRunFailed, r.stderrText())
		}
		if !strings.Contains(r.stderrText(), "mailbench: second signal: cutting the run") {
			t.Errorf("no second-signal line on stderr:\n%s", r.stderrText())
		}
		// What it had, marked PARTIAL, or (past the grace) nothing.
		out := r.stdout.String()
		if took > secondSignalGrace+time.Second {
			t.Errorf("exited %v after the second signal, want within %v", took, secondSignalGrace)
		}
		if !strings.Contains(out, "PARTIAL") && !strings.Contains(r.stderrText(), "not written in time") {
			t.Errorf("neither a PARTIAL report nor the timeout line:\nstdout:\n%s\nstderr:\n%s", out, r.stderrText())
		}
	})
}

// firstSignal sends sig once into a running run: it stops, drains and
// writes a report marked PARTIAL (exit 3).
func firstSignal(t *testing.T, bin, config string, sig syscall.Signal) {
	r := startSignalRun(t, bin, config)
	r.waitLine(t, "embedded target:", 30*time.Second)
	time.Sleep(2 * time.Second)
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	// Drain (the 10 s ramp-down) and settle (5 s) at most.
	code := r.wait(t, 45*time.Second)
	if code != exitRunFailed {
		t.Errorf("exit code %d, want %d\nstderr:\n%s", code, exitRunFailed, r.stderrText())
	}
	if out := r.stdout.String(); !strings.Contains(out, "PARTIAL") {
		t.Errorf("the report is not marked PARTIAL:\n%s", out)
	}
	if !strings.Contains(r.stderrText(), "stopping: no new sessions") {
		t.Errorf("no stopping line on stderr:\n%s", r.stderrText())
	}
}
