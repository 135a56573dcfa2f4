package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/configs"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	mbmetrics "github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/workload"
)

// sample is one reading of the process's memory.
type sample struct {
	at         time.Duration // since the run's start
	heap, rss  int64         // live heap at the last GC; resident set
	goroutines int
}

func readSample(start time.Time) sample {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return sample{at: time.Since(start), heap: int64(s[0].Value.Uint64()), rss: rss(), goroutines: runtime.NumGoroutine()}
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

// writeHeapProfile writes dir/heap-start.pprof at the first tick after the
// measurement window starts and dir/heap-end.pprof at the first tick after
// it ends, for `go tool pprof -base heap-start.pprof heap-end.pprof`.
func writeHeapProfile(b *testing.B, dir string, start time.Time, from, to time.Duration) {
	at := time.Since(start)
	for _, p := range []struct {
		name string
		at   time.Duration
	}{{"heap-start.pprof", from}, {"heap-end.pprof", to}} {
		name := filepath.Join(dir, p.name)
		if _, err := os.Stat(name); at < p.at || err == nil {
			continue
		}
		runtime.GC()
		f, err := os.Create(name)
		if err != nil {
			b.Error(err)
			return
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Error(err)
		}
		f.Close()
		b.Logf("%s at %.0fs, %d goroutines", name, at.Seconds(), runtime.NumGoroutine())
	}
}

// logSeries logs the samples as three lines (a benchmark's log is cut
// after 10 lines): live heap, RSS and goroutines, one figure every 10 s.
func logSeries(b *testing.B, ss []sample) {
	var heap, rssL, gor strings.Builder
	next := time.Duration(0)
	for _, s := range ss {
		if s.at < next {
			continue
		}
		next = s.at.Truncate(10*time.Second) + 10*time.Second
		fmt.Fprintf(&heap, " %.0fs:%.2f", s.at.Seconds(), float64(s.heap)/(1<<20))
		fmt.Fprintf(&rssL, " %.0fs:%.1f", s.at.Seconds(), float64(s.rss)/(1<<20))
		fmt.Fprintf(&gor, " %.0fs:%d", s.at.Seconds(), s.goroutines)
	}
	b.Logf("live heap MiB:%s", heap.String())
	b.Logf("RSS MiB:%s", rssL.String())
	b.Logf("goroutines:%s", gor.String())
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
// fixed rate (14,400 sessions/hour) for a 40 s warm-up and MAILBENCH_SOAK
// (default 60s) of measurement, sampling the live heap and RSS every 2 s, and fails when
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
	// A warm-up of grace + one interval: the timeline's histograms fill
	// within it (docs/performance.md, "What grows in the embedded soak").
	cfg.Phases.Warmup.Duration = 2*cfg.Load.OpTimeout.Duration + 10*time.Second + mbmetrics.DefaultInterval
	cfg.Phases.Measurement.Duration = d
	cfg.Phases.Rampdown.Duration = cfg.Load.OpTimeout.Duration // validation: ramp-down >= op_timeout
	cfg.Phases.Settle.Duration = 2 * time.Second
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// The embedded target's stored mail per minute, from the estimate.
	runMin := (cfg.Phases.Warmup.Duration + d + cfg.Phases.Rampdown.Duration).Minutes()
	expected := float64(plan.Memory.RunMail) / runMin

	if os.Getenv("MAILBENCH_SOAK_PROFILE") != "" {
		runtime.MemProfileRate = 4096 // the default (512 KiB) makes each sample half a megabyte
	}
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
					if dir := os.Getenv("MAILBENCH_SOAK_PROFILE"); dir != "" {
						writeHeapProfile(b, dir, start, cfg.Phases.Warmup.Duration, cfg.Phases.Warmup.Duration+d)
					}
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
		logSeries(b, ss)
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
