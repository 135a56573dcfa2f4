// Command idle measures mailbench's fixed per-run CPU cost (the target:
// under 1% of one core, bench/targets.txt): it runs a workload in this process through
// orchestrator.Run, as `mailbench run` does, at a very low rate (default 60
// sessions/hour, the quick config, embedded target), and splits the
// process's CPU time (getrusage: utime+stime) into
//
//   - start-up: from before orchestrator.Run to the first progress report
//     (config, memory budget, embedded target and its population, sink,
//     listeners; about one second of the run itself is included);
//   - steady state: between the first and the last progress report of the
//     measurement phase (an almost idle generator: timers, tickers, pollers,
//     and the rare session);
//   - the rest (ramp-down, settle, report) as a one-off cost.
//
// It exits 1 when the steady state uses more than -max percent of one core.
// With -cpuprofile P it writes P.startup.pprof and P.steady.pprof.
//
//	go run ./bench/idle                                   # 60/h, 60 s of measurement
//	go run ./bench/idle -rate 60 -measurement 120s -cpuprofile bench/out/idle
//
// See docs/performance.md, section "IMAP generator cost", "Results on branch perf2".
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/mailbench/mailbench/internal/lib/runtimetune"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/workload"
)

func main() {
	// As mailbench does: measure the runtime as it ships (internal/lib/runtimetune).
	runtimetune.Apply()
	config := flag.String("config", "quick", "workload `FILE`, or a shipped config's name")
	rate := flag.Float64("rate", 60, "sessions per hour")
	measurement := flag.Duration("measurement", 60*time.Second, "measurement phase")
	warmup := flag.Duration("warmup", 5*time.Second, "warm-up phase")
	profile := flag.String("cpuprofile", "", "write `P`.startup.pprof and P.steady.pprof")
	maxPct := flag.Float64("max", 1, "fail when the steady state uses more than this percent of one core")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("bench/idle: ")

	cfg, err := workload.LoadNamed(*config, workload.Overrides{})
	if err != nil {
		log.Fatal(err)
	}
	cfg.Load.SessionsPerHour = *rate
	cfg.Phases.Warmup.Duration = *warmup
	cfg.Phases.Measurement.Duration = *measurement
	// As short as the config allows: running operations get their whole
	// op_timeout (workload's rule), and not less than 5 s.
	cfg.Phases.Rampdown.Duration = max(5*time.Second, cfg.Load.OpTimeout.Duration)
	cfg.Phases.Settle.Duration = 2 * time.Second

	type sample struct {
		wall time.Time
		cpu  time.Duration
	}
	now := func() sample { return sample{time.Now(), metrics.ProcessCPU()} }
	var (
		mu                        sync.Mutex
		first, steady0, steady1   sample
		haveFirst, haveSteady     bool
		profFile                  *os.File
		startProfile, stopProfile = func(name string) {
			if *profile == "" {
				return
			}
			f, err := os.Create(*profile + "." + name + ".pprof")
			if err != nil {
				log.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				log.Fatal(err)
			}
			profFile = f
		}, func() {
			if profFile != nil {
				pprof.StopCPUProfile()
				profFile.Close()
				profFile = nil
			}
		}
	)
	startProfile("startup")
	start := now()
	opts := orchestrator.Options{
		Log: io.Discard,
		Progress: func(p session.RunProgress) {
			s := now()
			mu.Lock()
			defer mu.Unlock()
			if !haveFirst {
				first, haveFirst = s, true
				stopProfile()
			}
			if p.Phase == workload.Measurement {
				if !haveSteady {
					steady0, haveSteady = s, true
					startProfile("steady")
				}
				steady1 = s
			} else if haveSteady && profFile != nil {
				stopProfile()
			}
		},
	}
	run, err := orchestrator.Run(context.Background(), context.Background(), cfg, opts)
	end := now()
	mu.Lock()
	stopProfile()
	mu.Unlock()
	if err != nil {
		log.Fatal(err)
	}
	if !haveSteady || !steady1.wall.After(steady0.wall) {
		log.Fatal("no measurement phase seen")
	}
	pct := func(cpu, wall time.Duration) float64 { return 100 * cpu.Seconds() / wall.Seconds() }
	sw, sc := steady1.wall.Sub(steady0.wall), steady1.cpu-steady0.cpu
	fmt.Printf("idle: %s, %.0f sessions/h, warm-up %s, measurement %s; sessions started %d\n",
		*config, *rate, *warmup, *measurement, run.SessionsStarted)
	fmt.Printf("  start-up     %7.3f s CPU in %6.2f s (to the first progress report)\n", (first.cpu - start.cpu).Seconds(), first.wall.Sub(start.wall).Seconds())
	fmt.Printf("  steady state %7.3f s CPU in %6.2f s: %.2f%% of one core (max %.2f%%)\n", sc.Seconds(), sw.Seconds(), pct(sc, sw), *maxPct)
	fmt.Printf("  after        %7.3f s CPU in %6.2f s (ramp-down, settle, report)\n", (end.cpu - steady1.cpu).Seconds(), end.wall.Sub(steady1.wall).Seconds())
	fmt.Printf("  whole run    %7.3f s CPU in %6.2f s: %.2f%% of one core\n", (end.cpu - start.cpu).Seconds(), end.wall.Sub(start.wall).Seconds(), pct(end.cpu-start.cpu, end.wall.Sub(start.wall)))
	if pct(sc, sw) > *maxPct {
		fmt.Println("FAIL: steady state above the maximum")
		os.Exit(1)
	}
	fmt.Println("PASS")
}
