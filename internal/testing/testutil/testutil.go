// Package testutil holds helpers shared by the project's tests: golden
// files and an Observer that keeps what it is told. It is for tests only.
package testutil

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mailbench/mailbench/measure"
)

// Update is the -update flag of every test binary that uses Golden:
// `go test ./pkg -update` rewrites the golden files from the current output.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Golden compares got with the golden file at path (usually under
// testdata/), or rewrites the file when -update is given.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// ObservationLog is a measure.Observer that keeps every observation. It is
// safe for concurrent use.
type ObservationLog struct {
	mu  sync.Mutex
	obs []measure.Observation
}

// Observe keeps o.
func (l *ObservationLog) Observe(o measure.Observation) {
	l.mu.Lock()
	l.obs = append(l.obs, o)
	l.mu.Unlock()
}

// All returns a copy of the observations kept so far, in arrival order.
func (l *ObservationLog) All() []measure.Observation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]measure.Observation(nil), l.obs...)
}
