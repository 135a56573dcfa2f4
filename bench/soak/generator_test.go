package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/configs"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/workload"
)

// targetEnv runs TestHelperSoakTarget as the target process; its value is
// the sink address the target relays remote mail to.
const targetEnv = "MAILBENCH_SOAK_TARGET"

// Per-point allowance of the measurement window's timeline (metrics.Point:
// totals, delivery totals and, per function seen, its totals and encoded
// histogram; about 0.5 KiB per function, some 15 functions). The timeline
// keeps at most metrics.MaxPoints points, one per metrics.DefaultInterval
// here: 6 a minute.
const timelinePointBytes = 16 << 10

// generatorConfig is the quick workload pointed at a target at imap/smtp
// (plaintext, no auth), relaying to a sink at sink, with a measurement
// window of d.
func generatorConfig(imap, smtp, sink string, d time.Duration) (*workload.Config, error) {
	data, _ := configs.Lookup("quick")
	s := strings.Replace(string(data), "embedded = true", "embedded = false", 1)
	s = strings.Replace(s, `listen = "127.0.0.1:2526"`, fmt.Sprintf("listen = %q", sink), 1)
	s += fmt.Sprintf("\n[target.imap]\naddress = %q\ntls = \"none\"\n\n[target.smtp]\naddress = %q\ntls = \"none\"\nauth = \"none\"\n", imap, smtp)
	cfg, err := workload.ParseConfig("quick.toml", []byte(s))
	if err != nil {
		return nil, err
	}
	// The warm-up covers the timeline's fill: it keeps a histogram per
	// function for every interval still open (orchestrator's grace,
	// 2 × op_timeout + 10 s, after its end) and reuses them once the first
	// intervals close, so its heap rises by some 10 MiB over the first
	// grace + interval and is flat after (docs/performance.md, "Soak").
	cfg.Phases.Warmup.Duration = 2*cfg.Load.OpTimeout.Duration + 10*time.Second + metrics.DefaultInterval
	cfg.Phases.Measurement.Duration = d
	cfg.Phases.Rampdown.Duration = cfg.Load.OpTimeout.Duration // validation: ramp-down >= op_timeout
	cfg.Phases.Settle.Duration = 2 * time.Second
	return cfg, nil
}

// TestHelperSoakTarget is not a test: run by BenchmarkSoakGenerator as a
// child process, it serves the embedded target populated as `mailbench run
// quick` populates it (what bench/target does), prints "imap <addr> smtp
// <addr>" and serves until its stdin closes.
func TestHelperSoakTarget(t *testing.T) {
	sink := os.Getenv(targetEnv)
	if sink == "" {
		t.Skip("a child process of BenchmarkSoakGenerator")
	}
	cfg, err := generatorConfig("127.0.0.1:1", "127.0.0.1:1", sink, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	us, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, s := range cfg.Messages.Sizes {
		sizes = append(sizes, int(s.Size))
	}
	gen, err := message.NewGenerator(cfg.Seed, sizes)
	if err != nil {
		t.Fatal(err)
	}
	folders := append([]string(nil), cfg.Mailboxes.Folders...)
	for _, name := range cfg.Mailboxes.Standard() {
		if name != "Sent" && name != "Drafts" && name != "Trash" {
			folders = append(folders, name)
		}
	}
	tg, err := demo.Start(context.Background(), demo.Options{
		Users: us, LocalDomain: cfg.Users.LocalDomain, Folders: folders,
		Populate: mailboxes.Func(cfg, gen), RelayAddr: sink, OpTimeout: cfg.Load.OpTimeout.Duration,
		IMAPAddr: "127.0.0.1:0", SMTPAddr: "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("imap %s smtp %s\n", tg.IMAPAddr(), tg.SMTPAddr())
	io.Copy(io.Discard, os.Stdin)
	tg.Close()
	os.Exit(0)
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// robustSlope fits y = a + b·x robustly, so that one sample taken while a
// burst of sessions held their messages does not tilt the line: b is the
// Theil–Sen estimate (the median of the pairwise slopes, per minute) and
// se its standard error as least squares would give it, with the residuals'
// spread taken as 1.4826 × their median absolute deviation.
func robustSlope(ss []sample, y func(sample) int64) (b, se float64) {
	n := len(ss)
	if n < 3 {
		return 0, math.Inf(1)
	}
	var slopes []float64
	for i := range ss {
		for j := i + 1; j < n; j++ {
			if dx := ss[j].at.Minutes() - ss[i].at.Minutes(); dx > 0 {
				slopes = append(slopes, float64(y(ss[j])-y(ss[i]))/dx)
			}
		}
	}
	b = median(slopes)
	var res []float64
	var mx float64
	for _, s := range ss {
		res = append(res, float64(y(s))-b*s.at.Minutes())
		mx += s.at.Minutes() / float64(n)
	}
	a := median(res)
	var sxx float64
	for i, s := range ss {
		res[i] = math.Abs(res[i] - a)
		sxx += (s.at.Minutes() - mx) * (s.at.Minutes() - mx)
	}
	sigma := 1.4826 * median(res)
	return b, sigma / math.Sqrt(sxx)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	w := append([]float64(nil), v...)
	sort.Float64s(w)
	if len(w)%2 == 1 {
		return w[len(w)/2]
	}
	return (w[len(w)/2-1] + w[len(w)/2]) / 2
}

// BenchmarkSoakGenerator is BenchmarkSoak for the generator alone: the
// embedded target runs in a child process (the test binary re-executed,
// TestHelperSoakTarget), so the stored mail is not in this process, and
// orchestrator.Run drives it at the quick workload's fixed rate (14,400
// sessions/hour) for a 40 s warm-up and MAILBENCH_SOAK (default 60s) of
// measurement (about 2 minutes in all). Every
// 2 s it collects garbage and samples the live heap (runtime/metrics
// /gc/heap/live:bytes after runtime.GC), RSS and goroutines. Over the
// second half of the window the heap's slope (Theil–Sen: robust to one
// sample taken in a burst of sessions) must stay
// within what the generator is documented to keep per run: the ledger's
// 16 B per message + 16 B per recipient (the plan's Ledger over the run)
// and the timeline's points (timelinePointBytes each, 6 a minute). The
// fit's noise (sessions in flight when a sample is taken) is allowed as
// 3 standard errors of the slope, reported as heap-SE-KiB/min.
//
//	go test -run '^$' -bench SoakGenerator -benchtime 1x ./bench/soak
//	MAILBENCH_SOAK=10m go test -run '^$' -bench SoakGenerator -benchtime 1x -timeout 30m ./bench/soak
func BenchmarkSoakGenerator(b *testing.B) {
	d := time.Minute
	if v := os.Getenv("MAILBENCH_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("MAILBENCH_SOAK=%q: %v", v, err)
		}
	}
	sink, err := freeAddr()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSoakTarget$")
	cmd.Env = append(os.Environ(), targetEnv+"="+sink)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	var imapAddr, smtpAddr string
	line, err := bufio.NewReader(outp).ReadString('\n')
	if _, serr := fmt.Sscanf(line, "imap %s smtp %s", &imapAddr, &smtpAddr); err != nil || serr != nil {
		b.Fatalf("target process: %q: %v %v", line, err, serr)
	}
	cfg, err := generatorConfig(imapAddr, smtpAddr, sink, d)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := workload.NewPlan(cfg)
	if err != nil {
		b.Fatal(err)
	}
	runMin := (cfg.Phases.Warmup.Duration + d + cfg.Phases.Rampdown.Duration).Minutes()
	ledgerRate := float64(plan.Memory.Ledger) / runMin
	timelineRate := float64(timelinePointBytes) * float64(time.Minute/metrics.DefaultInterval)
	allowed := ledgerRate + timelineRate

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
					runtime.GC()
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
		if len(half) < 3 {
			b.Fatalf("only %d samples in the second half of the window", len(half))
		}
		heapOf := func(s sample) int64 { return s.heap }
		rssOf := func(s sample) int64 { return s.rss }
		gorOf := func(s sample) int64 { return int64(s.goroutines) }
		heapSlope, heapSE := robustSlope(half, heapOf)
		rssSlope := slope(half, rssOf)
		b.Logf("generator alone, soak %v at %.0f sessions/h: %d sessions; %d samples (%d in the second half); live heap %.2f → %.2f MiB (peak %.2f), slope over the second half %.0f ± %.0f KiB/min (allowed: ledger %.1f + timeline %.0f = %.0f KiB/min, + 3 SE); RSS peak %.1f MiB, slope %.0f KiB/min; goroutines %d → %d, slope %.1f/min",
			d, cfg.TargetRate(), run.SessionsStarted, len(ss), len(half), float64(half[0].heap)/(1<<20), float64(half[len(half)-1].heap)/(1<<20),
			float64(peakHeap)/(1<<20), heapSlope/1024, heapSE/1024, ledgerRate/1024, timelineRate/1024, allowed/1024,
			float64(peakRSS)/(1<<20), rssSlope/1024, half[0].goroutines, half[len(half)-1].goroutines, slope(half, gorOf))
		logSeries(b, ss)
		b.ReportMetric(heapSlope/1024, "heap-KiB/min")
		b.ReportMetric(heapSE/1024, "heap-SE-KiB/min")
		b.ReportMetric(allowed/1024, "allowed-KiB/min")
		// What the slope exceeds its allowance by (≤ 0 when flat): the
		// target bench/targets.txt checks.
		b.ReportMetric((heapSlope-allowed-3*heapSE)/1024, "excess-KiB/min")
		b.ReportMetric(rssSlope/1024, "rss-KiB/min")
		b.ReportMetric(float64(peakHeap)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(peakRSS)/(1<<20), "rss-MiB")
		if heapSlope > allowed+3*heapSE {
			b.Errorf("the generator's live heap grows %.0f ± %.0f KiB/min over the second half, more than the %.0f KiB/min its ledger and timeline may grow (+ 3 SE)", heapSlope/1024, heapSE/1024, allowed/1024)
		}
		// RSS is not fitted: it climbs towards the collector's heap goal
		// (twice the live heap with GOGC=100) as encoding garbage churns
		// through fresh pages, and the scavenger gives pages back slowly.
		// It must stay under that goal + 32 MiB (stacks, runtime, binary).
		if limit := 2*peakHeap + 32<<20; peakRSS > limit {
			b.Errorf("peak RSS %.1f MiB above twice the peak live heap + 32 MiB (%.1f MiB)", float64(peakRSS)/(1<<20), float64(limit)/(1<<20))
		}
	}
}

func TestRobustSlope(t *testing.T) {
	var ss []sample
	for i := range 15 {
		ss = append(ss, sample{at: time.Duration(i) * 2 * time.Second, heap: 24<<20 + int64(i)*(10<<10)}) // 300 KiB/min
	}
	ss[10].heap += 4 << 20 // one sample in a burst
	b, se := robustSlope(ss, func(s sample) int64 { return s.heap })
	if math.Abs(b/1024-300) > 1 || se > 1024 {
		t.Errorf("robustSlope = %.1f ± %.1f KiB/min, want 300 ± ~0", b/1024, se/1024)
	}
	if ols := slope(ss, func(s sample) int64 { return s.heap }); ols/1024 < 1000 {
		t.Errorf("least squares gives %.0f KiB/min: the spike should tilt it (test premise)", ols/1024)
	}
}
