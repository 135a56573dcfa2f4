package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/testconfig"
)

// TestFailedRunReleasesEverything: a run whose runner fails (here: more
// shards than users) returns ErrRun, leaves an existing results file as it
// was, keeps what it wrote beside it, and leaves no watcher, checker or
// target goroutine behind.
func TestFailedRunReleasesEverything(t *testing.T) {
	cfg := testconfig.Quick(t, time.Second)
	cfg.Users.Count = 1
	cfg.Delivery.WatchUsers = 1
	dir := t.TempDir()
	results := filepath.Join(dir, "ops.csv")
	if err := os.WriteFile(results, []byte("an earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ctx := context.Background()
	_, err := Run(ctx, ctx, cfg, Options{ResultsFile: results, ShardOptions: ShardOptions{Shard: schedule.Shard{Index: 1, Count: 2}}})
	var er *ErrRun
	if !errors.As(err, &er) || !strings.Contains(err.Error(), "fewer users") {
		t.Fatalf("err %v, want the runner's failure as ErrRun", err)
	}
	if b, _ := os.ReadFile(results); string(b) != "an earlier run\n" {
		t.Errorf("the failed run changed the earlier results: %q", b)
	}
	if _, err := os.Stat(results + ".partial"); err != nil {
		t.Errorf("what the failed run wrote is not kept: %v", err)
	}
	deadline := time.Now().Add(time.Second) // the runtime may take a moment to reap
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the failed run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
