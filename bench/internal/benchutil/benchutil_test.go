package benchutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:25": true, "[::1]:25": true, "127.0.0.2:25": true,
		"10.0.0.1:25": false, "example.test:25": false, "127.0.0.1": false, ":25": false,
	} {
		if err := Loopback("addr", addr); (err == nil) != ok {
			t.Errorf("Loopback(%q) = %v, want ok %v", addr, err, ok)
		}
	}
}

func TestStartCPUProfile(t *testing.T) {
	stop, err := StartCPUProfile("")
	if err != nil || stop() != nil {
		t.Fatalf("no path: %v", err)
	}
	p := filepath.Join(t.TempDir(), "cpu.pprof")
	if stop, err = StartCPUProfile(p); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %v)", p, err, fi)
	}
}
