// Package testconfig gives tests a short run of the shipped quick workload
// against the embedded target. It is for tests only.
package testconfig

import (
	"testing"
	"time"

	"github.com/mailbench/mailbench/configs"
	"github.com/mailbench/mailbench/workload"
)

// Quick is configs/quick.toml shortened for tests: 10 sessions/s (so every
// session type, and so every function, runs within a few seconds), 10 ms
// think time, 2 s operation deadlines, a sink on a free port, warm-up 0.5 s,
// the given measurement, ramp-down 2 s, settle 1 s. Callers adjust the rest.
func Quick(t testing.TB, measurement time.Duration) *workload.Config {
	t.Helper()
	data, ok := configs.Lookup("quick")
	if !ok {
		t.Fatal("quick.toml is not shipped")
	}
	cfg, err := workload.ParseConfig("quick.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sink.Listen = "127.0.0.1:0"
	cfg.Load.SessionsPerHour = 36000
	cfg.Load.ThinkTime.Duration = 10 * time.Millisecond
	cfg.Load.OpTimeout.Duration = 2 * time.Second
	cfg.Phases.Warmup.Duration = 500 * time.Millisecond
	cfg.Phases.Measurement.Duration = measurement
	cfg.Phases.Rampdown.Duration = 2 * time.Second
	cfg.Phases.Settle.Duration = time.Second
	return cfg
}
