package message

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden pins the rendered bytes for a fixed seed, so that a change in
// generation (which would silently change every benchmark's mail) shows up
// as a diff. Run with -update after an intended change.
func TestGolden(t *testing.T) {
	g := newGen(t, 42, []int{1 << 10, 8 << 10})
	for _, size := range []int{1 << 10, 8 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			got := g.Message(envelope(2), size, 1)
			path := filepath.Join("testdata", fmt.Sprintf("seed42_%d.eml", size))
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendered message differs from %s (run with -update if intended)", path)
			}
		})
	}
}
