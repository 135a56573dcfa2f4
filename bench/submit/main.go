// Command submit sends mail the way a mailbench run submits it (smtpclient,
// messages from message.Generator, one EHLO per connection, no pipelining)
// with smtp-source's shape of load: -sessions concurrent sessions, -messages
// messages of -size bytes in all, either a new connection per message
// (reconnect, smtp-source's default) or each session keeping its connection
// (keep, smtp-source -d). It prints one line:
//
//	submit MODE MESSAGES WALL_SECONDS CPU_SECONDS
//
// where CPU_SECONDS is this process's utime+stime (getrusage) over the
// sending, for bench/submit-vs-smtp-source, which runs it and Postfix's
// smtp-source in alternating trials into the same sink.
//
//	go run ./bench/submit -addr 127.0.0.1:2625 -mode keep -cpuprofile submit.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/bench/internal/benchutil"
	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/lib/runtimetune"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/smtpclient"
)

func main() {
	// As mailbench does: measure the runtime as it ships (internal/lib/runtimetune).
	runtimetune.Apply()
	runtimetune.AdaptCores()
	addr := flag.String("addr", "127.0.0.1:2625", "loopback SMTP `host:port` to submit to")
	sessions := flag.Int("sessions", 20, "concurrent sessions (smtp-source -s)")
	size := flag.Int("size", 5120, "message size in bytes (smtp-source -l)")
	messages := flag.Int("messages", 20000, "messages in all (smtp-source -m)")
	mode := flag.String("mode", "reconnect", "reconnect: a connection per message; keep: one per session (smtp-source -d)")
	from := flag.String("from", "sender@source.test", "MAIL FROM")
	to := flag.String("to", "rcpt@sink.test", "RCPT TO")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the sending to `FILE`")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("bench/submit: ")

	if err := benchutil.Loopback("addr", *addr); err != nil {
		log.Fatal(err)
	}
	if *mode != "reconnect" && *mode != "keep" {
		log.Fatalf("-mode wants reconnect or keep, got %q", *mode)
	}
	if *sessions < 1 || *messages < *sessions || *size < 1 {
		log.Fatal("-sessions ≥ 1, -messages ≥ -sessions and -size ≥ 1, please")
	}
	gen, err := message.NewGenerator(11, []int{*size})
	if err != nil {
		log.Fatal(err)
	}
	cfg := smtpclient.Config{Address: *addr, Timeout: 30 * time.Second, Observer: measure.Discard}

	stopProfile, err := benchutil.StartCPUProfile(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := stopProfile(); err != nil {
			log.Print(err)
		}
	}()

	ctx := context.Background()
	var seq atomic.Uint64
	var failed atomic.Int64
	var firstErr sync.Once
	send := func(c *smtpclient.Client) error {
		n := seq.Add(1)
		env := message.Envelope{
			ID: delivery.NewID(0x5b17, n), From: *from, To: []string{*to},
			Subject: "submit", Sent: time.Now(),
		}
		res, err := c.Send(ctx, *from, []string{*to}, gen.Source(env, *size, n))
		if err == nil && len(res.Accepted) != 1 {
			err = fmt.Errorf("recipient refused: %v", res.Refused)
		}
		return err
	}
	fail := func(err error) {
		failed.Add(1)
		firstErr.Do(func() { log.Print(err) })
	}

	cpu0, wall0 := metrics.ProcessCPU(), time.Now()
	var wg sync.WaitGroup
	for s := range *sessions {
		count := *messages / *sessions
		if s < *messages%*sessions {
			count++
		}
		wg.Go(func() {
			var c *smtpclient.Client
			for range count {
				if c == nil {
					var err error
					if c, err = smtpclient.Connect(ctx, cfg); err != nil {
						fail(err)
						continue
					}
				}
				if err := send(c); err != nil {
					fail(err)
					c.Close()
					c = nil
					continue
				}
				if *mode == "reconnect" {
					if err := c.Quit(ctx); err != nil {
						fail(err)
					}
					c = nil
				}
			}
			if c != nil {
				if err := c.Quit(ctx); err != nil {
					fail(err)
				}
			}
		})
	}
	wg.Wait()
	cpu, wall := metrics.ProcessCPU()-cpu0, time.Since(wall0)
	if n := failed.Load(); n > 0 {
		log.Fatalf("%d of %d messages or quits failed", n, *messages)
	}
	fmt.Printf("submit %s %d %.3f %.3f\n", *mode, *messages, wall.Seconds(), cpu.Seconds())
}
