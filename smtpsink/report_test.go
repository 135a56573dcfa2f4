package smtpsink

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRunReporter drives the reporter on synctest's fake clock and compares
// its output with testdata/report.golden.
func TestRunReporter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			s.RunReporter(ctx, &out, 10*time.Second)
			close(done)
		}()

		// 0-10s: 50 messages, 2 connections, relay delays 1ms..50ms.
		time.Sleep(5 * time.Second)
		s.connections.Add(2)
		s.active.Add(2)
		for i := range 50 {
			s.messages.Add(1)
			s.recipients.Add(2)
			s.bytes.Add(4096)
			s.recordRelayDelay(time.Duration(i+1) * time.Millisecond)
		}
		// 10-20s: 200 more, a rejection, an error, a refused connection, a slow relay.
		time.Sleep(10 * time.Second)
		s.messages.Add(200)
		s.recipients.Add(210)
		s.bytes.Add(3 << 20)
		s.rejected.Add(1)
		s.errors.Add(1)
		s.refused.Add(1)
		s.active.Add(-1)
		s.recordRelayDelay(90 * time.Second)
		// 20-25s: nothing, then the context ends.
		time.Sleep(10 * time.Second)
		cancel()
		<-done

		golden := filepath.Join("testdata", "report.golden")
		if *update {
			if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if got := out.String(); got != string(want) {
			t.Errorf("report:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestRunReporterStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 35*time.Second)
		defer cancel()
		var out syncBuffer
		start := time.Now()
		s.RunReporter(ctx, &out, 0) // default interval
		if took := time.Since(start); took != 35*time.Second {
			t.Errorf("returned after %v, want 35s", took)
		}
		lines := 0
		for _, c := range out.String() {
			if c == '\n' {
				lines++
			}
		}
		if want := int(35*time.Second/DefaultReportInterval) + 1; lines != want {
			t.Errorf("%d lines, want %d:\n%s", lines, want, out.String())
		}
	})
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0B"},
		{1023, "1023B"},
		{1024, "1.0KiB"},
		{1536, "1.5KiB"},
		{5 << 20, "5.0MiB"},
		{3 << 30, "3.0GiB"},
		{2 << 40, "2.0TiB"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
