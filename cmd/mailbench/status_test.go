package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// TestRunStatusFrame: operations per second come from the difference of
// two progress reports over the time between them; errors appear in the
// report's class order; settle shows no rate.
func TestRunStatusFrame(t *testing.T) {
	now := time.Unix(0, 0)
	s := &runStatus{now: func() time.Time { return now }}
	p := session.RunProgress{Phase: workload.Measurement, Elapsed: 20 * time.Second, Total: 80 * time.Second,
		PerHour: 3500, TargetPerHour: 3600, Operations: 100, Sessions: schedule.Counts{Late: 2, Dropped: 1},
		Errors: map[measure.ErrorClass]int64{measure.Protocol: 1, measure.Timeout: 3},
		Worst:  &session.WorstP95{Function: measure.IMAPList, P95: 7 * time.Millisecond, Limit: 5 * time.Second}}
	f := s.frame(p)
	if f.OpsPerSecond != 0 || f.Left != time.Minute || f.Late != 2 || f.Dropped != 1 || f.Worst == nil || f.Worst.Function != "IMAP LIST" {
		t.Errorf("first frame %+v", f)
	}
	if len(f.Errors) != 2 || f.Errors[0].Class != "timeout" || f.Errors[1].Class != "protocol" {
		t.Errorf("errors %+v: want timeout then protocol", f.Errors)
	}
	now = now.Add(2 * time.Second)
	p.Operations = 150
	if f = s.frame(p); f.OpsPerSecond != 25 {
		t.Errorf("ops/s %v, want 25", f.OpsPerSecond)
	}
	f = s.frame(session.RunProgress{Phase: workload.Settle, Elapsed: 5 * time.Second, Total: 65 * time.Second, Awaiting: 4, TargetPerHour: 3600})
	if f.TargetPerHour != 0 || f.Awaiting != 4 || f.Left != time.Minute {
		t.Errorf("settle frame %+v", f)
	}
}

// TestJobFrame: time left from the rate so far; unknown before any
// progress.
func TestJobFrame(t *testing.T) {
	f := jobFrame(populate.JobProgress{Job: "init", Unit: "messages", Done: 250, Total: 1000, Elapsed: 5 * time.Second})
	if f.Rate != 50 || f.Left != 15*time.Second || f.Phase != "init" {
		t.Errorf("%+v", f)
	}
	if f = jobFrame(populate.JobProgress{Job: "clean", Unit: "users", Total: 10, Elapsed: time.Second}); f.Left != -1 {
		t.Errorf("no progress yet: Left %v, want unknown", f.Left)
	}
}

// TestTextFitsTheWidth: what check and report print fits the width the
// CLI lays text out in: $COLUMNS when stdout is no terminal, else 80.
func TestTextFitsTheWidth(t *testing.T) {
	t.Setenv("MAILBENCH_PASSWORD", "test-password")
	for _, width := range []int{80, 120} {
		t.Setenv("COLUMNS", fmt.Sprint(width))
		for _, args := range [][]string{
			{"check", "quick"}, {"check", "enterprise"}, {"check", "dovecot-postfix"},
			{"report", "../../report/render/testdata/schema1/clients_run.json"},
			{"report", "../../report/render/testdata/schema1/could_not_run.json"},
			{"report", "--side-by-side", "../../report/render/testdata/schema1/clients_run.json", "../../report/render/testdata/schema1/external_sink_shard.json"},
		} {
			_, out, _ := runMain(args...)
			if out == "" {
				t.Fatalf("%v printed nothing", args)
			}
			for _, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > width {
					t.Errorf("%v at %d columns: a line of %d: %q", args, width, n, line)
				}
			}
		}
	}
}

// TestReportFromALog: a log that holds a report between the markers (a
// manager's kubectl logs) renders as the report itself; a cut one is an
// error naming the missing end.
func TestReportFromALog(t *testing.T) {
	path, _ := writeReport(t, "good", 200, 10*time.Millisecond)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.ReadJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	log.WriteString("manager: waiting for 3 generators\nmailbench devel benchmark report\nVerdict: COMPLIANT\n")
	if err := writeReportInLog(&log, r); err != nil {
		t.Fatal(err)
	}
	log.WriteString("manager: done\n")
	logPath := filepath.Join(t.TempDir(), "run.log")
	os.WriteFile(logPath, log.Bytes(), 0o644)
	code, fromLog, stderr := runMain("report", logPath)
	_, fromFile, _ := runMain("report", path)
	if code != 0 || fromLog != fromFile {
		t.Errorf("report of the log: exit %d, %s\n%s\nwant the file's:\n%s", code, stderr, fromLog, fromFile)
	}
	cut := filepath.Join(t.TempDir(), "cut.log")
	os.WriteFile(cut, log.Bytes()[:log.Len()/2], 0o644)
	if code, _, stderr := runMain("report", cut); code != exitUsage || !strings.Contains(stderr, "the log was cut") {
		t.Errorf("a cut log: exit %d, %s", code, stderr)
	}
}
