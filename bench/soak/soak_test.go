package soak

import (
	"context"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/configs"
	"github.com/mailbench/mailbench/orchestrator"
	"github.com/mailbench/mailbench/workload"
)

// sample is one reading of the process's memory.
type sample struct {
	at        time.Duration // since the run's start
	heap, rss int64         // live heap at the last GC; resident set
}

func readSample(start time.Time) sample {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return sample{at: time.Since(start), heap: int64(s[0].Value.Uint64()), rss: rss()}
}

// rss is VmRSS of /proc/self/status; 0 where there is none.
func rss() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n * 1024
		}
	}
	return 0
}

// slope fits y = a + b·x by least squares and returns b per minute.
func slope(ss []sample, y func(sample) int64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range ss {
		x, v := s.at.Minutes(), float64(y(s))
		n++
		sx += x
		sy += v
		sxx += x * x
		sxy += x * v
	}
	if d := n*sxx - sx*sx; n >= 2 && d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}

// BenchmarkSoak runs the quick workload against the embedded target at its
// fixed rate (14,400 sessions/hour) for MAILBENCH_SOAK (default 60s) of
// measurement, sampling the live heap and RSS every 2 s, and fails when
// the live heap grows over the second half of the run faster than twice
// the mail the embedded target stores (the plan's RunMail, which a real
// server would hold instead) plus 1 MiB/min: besides that mail, a run's
// memory stays flat.
//
//	go test -run '^$' -bench Soak -benchtime 1x ./bench/soak
//	MAILBENCH_SOAK=10m go test -run '^$' -bench Soak -benchtime 1x -timeout 30m ./bench/soak
func BenchmarkSoak(b *testing.B) {
	d := time.Minute
	if v := os.Getenv("MAILBENCH_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("MAILBENCH_SOAK=%q: %v", v, err)
		}
	}
	data, _ := configs.Lookup("quick")
	cfg, err := workload.ParseConfig("quick.toml", data)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Sink.Listen = "127.0.0.1:0"
	cfg.Phases.Warmup.Duration = 10 * time.Second
	cfg.Phases.Measurement.Duration = d
	cfg.Phases.Rampdown.Duration = 5 * time.Second
	cfg.Phases.Settle.Duration = 2 * time.Second
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// The embedded target's stored mail per minute, from the estimate.
	runMin := (cfg.Phases.Warmup.Duration + d + cfg.Phases.Rampdown.Duration).Minutes()
	expected := float64(plan.Memory.RunMail) / runMin

	for range b.N {
		start := time.Now()
		var mu sync.Mutex
		var ss []sample
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(2 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					s := readSample(start)
					mu.Lock()
					ss = append(ss, s)
					mu.Unlock()
				}
			}
		}()
		ctx := context.Background()
		run, err := orchestrator.Run(ctx, ctx, cfg, orchestrator.Options{})
		close(done)
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		// The second half of the measurement window.
		ms, me := cfg.Phases.Warmup.Duration+d/2, cfg.Phases.Warmup.Duration+d
		var half []sample
		var peakHeap, peakRSS int64
		for _, s := range ss {
			peakHeap, peakRSS = max(peakHeap, s.heap), max(peakRSS, s.rss)
			if s.at >= ms && s.at <= me {
				half = append(half, s)
			}
		}
		mu.Unlock()
		heapSlope := slope(half, func(s sample) int64 { return s.heap })
		rssSlope := slope(half, func(s sample) int64 { return s.rss })
		b.Logf("soak %v at %.0f sessions/h: %d sessions; %d samples; live heap peak %.1f MiB, slope over the second half %.0f KiB/min (the embedded target's stored mail: %.0f KiB/min expected); RSS peak %.1f MiB, slope %.0f KiB/min; estimate %s",
			d, cfg.TargetRate(), run.SessionsStarted, len(ss), float64(peakHeap)/(1<<20), heapSlope/1024, expected/1024,
			float64(peakRSS)/(1<<20), rssSlope/1024, plan.Memory)
		for _, s := range ss {
			b.Logf("  %6.0fs heap %7.1f MiB  rss %7.1f MiB", s.at.Seconds(), float64(s.heap)/(1<<20), float64(s.rss)/(1<<20))
		}
		b.ReportMetric(heapSlope/1024, "heap-KiB/min")
		b.ReportMetric(expected/1024, "stored-KiB/min")
		b.ReportMetric(float64(peakHeap)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(peakRSS)/(1<<20), "rss-MiB")
		if len(half) < 3 {
			b.Fatalf("only %d samples in the second half of the window", len(half))
		}
		// The live heap is read at collections, so it rises in steps: a
		// 30 s fit of a few steps is coarse. Twice the stored mail's rate
		// + 1 MiB/min still catches a leak per session or operation.
		if limit := 2*expected + 1<<20; heapSlope > limit {
			b.Errorf("the live heap grows %.0f KiB/min over the second half, more than twice the %.0f KiB/min the embedded target stores + 1 MiB/min", heapSlope/1024, expected/1024)
		}
		if peakRSS > 0 && peakRSS > plan.Memory.Total {
			b.Errorf("peak RSS %.1f MiB above the estimate %s", float64(peakRSS)/(1<<20), plan.Memory)
		}
	}
}
