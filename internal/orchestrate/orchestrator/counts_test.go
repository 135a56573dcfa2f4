package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/report"
)

// runCounts are the exact counts of a run that the seed fixes: sessions by
// type, operations per function, delivery accounting. Timings and byte
// counts (the run id's digits vary) are left out.
type runCounts struct {
	Started   int64            `json:"started"`
	ByType    map[string]int64 `json:"byType"`
	Functions map[string]int64 `json:"functions"`
	Delivery  map[string]int64 `json:"delivery"`
}

func countsOf(t *testing.T, r *report.Run) runCounts {
	t.Helper()
	c := runCounts{Started: r.SessionsStarted, ByType: r.SessionsByType, Functions: map[string]int64{}}
	for _, f := range r.Functions {
		c.Functions[string(f.Function)] = f.Operations
	}
	b, err := json.Marshal(r.Delivery)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c.Delivery); err != nil {
		t.Fatal(err)
	}
	delete(c.Delivery, "accepted_bytes")
	// How each delivery was timed, and whether it was late, depends on
	// timing (who saw it first, how long it took), not on the seed.
	for _, k := range []string{"timed_by_internaldate", "timed_by_announcement", "late", "late_local", "late_remote"} {
		delete(c.Delivery, k)
	}
	return c
}

// TestQuickRunCountsUnchanged runs the quick workload, shortened as
// testconfig.Quick does, with a 4 s window, and compares its exact counts
// with testdata/quick-counts.json: moving or reshaping code must not change
// what a seed gives. Run with MAILBENCH_UPDATE_COUNTS=1 only for a deliberate change of
// the workload's behaviour, and say so in the commit.
func TestQuickRunCountsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("a 7 s run")
	}
	var got runCounts
	synctest.Test(t, func(t *testing.T) {
		cfg := testconfig.Quick(t, 4*time.Second)
		ctx := context.Background()
		run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		got = countsOf(t, run)
	})
	path := filepath.Join("testdata", "quick-counts.json")
	if os.Getenv("MAILBENCH_UPDATE_COUNTS") == "1" {
		b, _ := json.MarshalIndent(got, "", " ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want runCounts
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.MarshalIndent(got, "", " ")
	wb, _ := json.MarshalIndent(want, "", " ")
	if string(gb) != string(wb) {
		t.Errorf("the same seed gave other counts than before:\n got %s\nwant %s", gb, wb)
	}
}
