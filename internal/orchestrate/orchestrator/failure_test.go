package orchestrator

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
)

// TestFailedRunReleasesEverything: a run whose runner fails (here: more
// shards than users) returns RunError, does not close the caller's results
// stream, and leaves no watcher, checker or target goroutine behind.
func TestFailedRunReleasesEverything(t *testing.T) {
	cfg := testconfig.Quick(t, time.Second)
	cfg.Users.Count = 1
	cfg.Delivery.WatchUsers = 1
	var results closeCounter
	before := runtime.NumGoroutine()
	ctx := context.Background()
	_, err := Run(ctx, ctx, cfg, Options{Results: &results, ShardOptions: ShardOptions{Shard: schedule.Shard{Index: 1, Count: 2}}})
	var er *RunError
	if !errors.As(err, &er) || !strings.Contains(err.Error(), "fewer users") {
		t.Fatalf("err %v, want the runner's failure as RunError", err)
	}
	if results.closed {
		t.Error("the failed run closed the caller's results stream")
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
