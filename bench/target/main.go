// Command target serves mailbench's embedded target (package demo) in a
// process of its own, populated exactly as `mailbench run` populates it for
// a workload file, so that the generator's CPU and the target's CPU can be
// measured apart (bench/imap-cost, bench/rate, docs/performance.md). It
// serves until SIGINT or SIGTERM (or -max), then prints one line with its
// own CPU time (utime+stime), page faults and garbage collection over its
// serving time on stdout.
//
//	go run ./bench/target -config configs/quick.toml -imap 127.0.0.1:1144 -smtp 127.0.0.1:2527
//
// A workload that runs against it sets target.embedded = false and points
// target.imap.address / target.smtp.address at the two listeners. Plaintext
// only. Mail for other domains is relayed to the config's sink.listen when
// the sink is enabled, else refused.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/mailbench/mailbench/bench/internal/benchutil"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/workload"
)

func main() {
	config := flag.String("config", "quick", "workload `FILE`, or a shipped config's name: users, password, mailboxes and sizes")
	users := flag.Int("users", 0, "override users.count (0: the config's)")
	imapAddr := flag.String("imap", "127.0.0.1:1144", "loopback IMAP listen address")
	smtpAddr := flag.String("smtp", "127.0.0.1:2527", "loopback SMTP listen address")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the serving time to `FILE`")
	mutexprofile := flag.String("mutexprofile", "", "write a profile of the serving time's lock contention (every contended unlock sampled) to `FILE`")
	var latency latencyFlag
	flag.Var(&latency, "latency", "added delay per command, `CMD=D[,CMD=D...]` (demo.LatencyCommands, e.g. FETCH=200ms,MAIL=50ms): a slow server without its CPU, for the generator's cost at high concurrency")
	maxRun := flag.Duration("max", 30*time.Minute, "stop after this long whatever happens")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("bench/target: ")

	for flagName, a := range map[string]string{"imap": *imapAddr, "smtp": *smtpAddr} {
		if err := benchutil.Loopback(flagName, a); err != nil {
			log.Fatal(err)
		}
	}
	cfg, err := workload.LoadNamed(*config, workload.Overrides{})
	if err != nil {
		log.Fatal(err)
	}
	if *users > 0 {
		cfg.Users.Count = *users
	}
	us, err := cfg.LoadUsers()
	if err != nil {
		log.Fatal(err)
	}
	var sizes []int
	for _, s := range cfg.Messages.Sizes {
		sizes = append(sizes, int(s.Size))
	}
	gen, err := message.NewGenerator(cfg.Seed, sizes)
	if err != nil {
		log.Fatal(err)
	}
	relay := ""
	if cfg.Sink.Enabled {
		relay = cfg.Sink.Listen
	}
	t0 := time.Now()
	tg, err := demo.Start(context.Background(), demo.Options{
		Users: us, LocalDomain: cfg.Users.LocalDomain, Folders: folders(cfg),
		Populate: mailboxes.Func(cfg, gen), RelayAddr: relay, OpTimeout: cfg.Load.OpTimeout.Duration,
		IMAPAddr: *imapAddr, SMTPAddr: *smtpAddr, Latency: latency,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("imap %s smtp %s users %d populated in %v\n", tg.IMAPAddr(), tg.SMTPAddr(), len(us), time.Since(t0).Round(time.Millisecond))
	startCPU := metrics.ProcessCPU()
	gc0 := readGC()
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)

	stopProfile, err := benchutil.StartCPUProfile(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer stopProfile()
	if *mutexprofile != "" {
		runtime.SetMutexProfileFraction(1)
		defer writeMutexProfile(*mutexprofile)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(*maxRun):
	}
	st := tg.Stats()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	gc := readGC().since(gc0)
	tg.Close()
	fmt.Printf("target: cpu %.3f s while serving, delivered %d, relayed %d, rejected %d, page faults %d; %v\n",
		(metrics.ProcessCPU() - startCPU).Seconds(), st.Delivered, st.Relayed, st.Rejected, ru1.Minflt-ru0.Minflt, gc)
}

// latencyFlag is -latency's value: demo.Options.Latency.
type latencyFlag map[string]time.Duration

func (l *latencyFlag) String() string { return fmt.Sprint(map[string]time.Duration(*l)) }

func (l *latencyFlag) Set(v string) error {
	if *l == nil {
		*l = map[string]time.Duration{}
	}
	for kv := range strings.SplitSeq(v, ",") {
		cmd, d, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q: want CMD=DURATION", kv)
		}
		dur, err := time.ParseDuration(d)
		if err != nil {
			return fmt.Errorf("%q: %w", kv, err)
		}
		(*l)[strings.TrimSpace(cmd)] = dur
	}
	return nil
}

// writeMutexProfile writes the contention profile collected since
// SetMutexProfileFraction to path.
func writeMutexProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("mutex").WriteTo(f, 0); err != nil {
		log.Print(err)
	}
}

// folders is what orchestrator gives the embedded target: the extra folders,
// and the configured standard mailboxes that are not Sent, Drafts or Trash.
func folders(cfg *workload.Config) []string {
	out := append([]string(nil), cfg.Mailboxes.Folders...)
	for _, name := range cfg.Mailboxes.Standard() {
		if name != "Sent" && name != "Drafts" && name != "Trash" {
			out = append(out, name)
		}
	}
	return out
}
