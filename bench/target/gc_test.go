package main

import (
	"runtime"
	"testing"
)

// sink keeps TestReadGC's allocations from being optimized away.
var sink [][]byte

func TestReadGC(t *testing.T) {
	before := readGC()
	for range 2 {
		for range 1000 {
			sink = append(sink, make([]byte, 4096))
		}
		sink = nil
		runtime.GC()
	}
	got := readGC().since(before)
	if got.cycles < 2 {
		t.Errorf("cycles = %d after two runtime.GC calls, want at least 2", got.cycles)
	}
	if got.cpu <= 0 {
		t.Errorf("gc CPU = %v after two cycles, want > 0", got.cpu)
	}
	if got.assist < 0 || got.assist > got.cpu {
		t.Errorf("assists = %v, want within [0, %v] (a part of the GC's CPU)", got.assist, got.cpu)
	}
}

func TestGCUseString(t *testing.T) {
	u := gcUse{cycles: 7, cpu: 1.75, assist: 0.5}.since(gcUse{cycles: 3, cpu: 0.5, assist: 0.25})
	const want = "gc 4 cycles, 1.250 s of CPU, 0.250 s of it assists (runtime estimates)"
	if got := u.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
