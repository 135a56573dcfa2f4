// Command sink runs smtpsink in-process with the options of `mailbench
// sink` (the package defaults) and an optional CPU profile, for
// bench/sink-vs-smtp-sink. It serves until SIGINT or SIGTERM (or -max),
// then writes the profile and prints one totals line on stdout.
//
//	go run ./bench/sink -listen 127.0.0.1:2627 -cpuprofile sink.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/mailbench/mailbench/bench/internal/benchutil"
	"github.com/mailbench/mailbench/internal/lib/runtimetune"
	"github.com/mailbench/mailbench/smtpsink"
)

func main() {
	// As mailbench does: measure the runtime as it ships (internal/lib/runtimetune).
	runtimetune.Apply()
	listen := flag.String("listen", "127.0.0.1:2627", "loopback address to listen on")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole serving time to `FILE`")
	maxRun := flag.Duration("max", 10*time.Minute, "stop after this long whatever happens")
	cores := flag.Int("cores", 1, "GOMAXPROCS, as `mailbench sink --cores` (default 1); 0: all")
	flag.Parse()
	if *cores > 0 {
		runtime.GOMAXPROCS(*cores)
	}
	log.SetFlags(0)
	log.SetPrefix("bench/sink: ")

	if err := benchutil.Loopback("listen", *listen); err != nil {
		log.Fatal(err)
	}
	s, err := smtpsink.New(smtpsink.Options{Addr: *listen})
	if err != nil {
		log.Fatal(err)
	}
	stopProfile, err := benchutil.StartCPUProfile(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := stopProfile(); err != nil {
			log.Print(err)
		}
	}()
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "bench/sink: listening on %s\n", s.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(*maxRun):
		log.Printf("stopping after -max %v", *maxRun)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.Shutdown(sctx)
	n := s.Counts()
	fmt.Printf("sink totals: %d connections, %d messages, %d recipients, %d bytes, %d rejected, %d errors\n",
		n.Connections, n.Messages, n.Recipients, n.Bytes, n.Rejected, n.Errors)
}
