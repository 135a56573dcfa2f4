// Command slowloris holds N connections to an SMTP server open the slow
// way: each reads the banner, then sends one byte every interval and never
// a line end. It reports, every few seconds, how many of its connections
// are still open. Used to show that mailbench's sink lets a real client in
// beside them (docs/performance.md, "Slowloris"):
//
//	mailbench sink --listen 127.0.0.1:2526 --max-connections 1000 --timeout 60s &
//	go run ./bench/slowloris -addr 127.0.0.1:2526 -n 1000 &
//	smtp-source -m 10 -c 127.0.0.1:2526
//
// Loopback only.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:2526", "the SMTP server")
	n := flag.Int("n", 1000, "connections")
	every := flag.Duration("every", 20*time.Second, "one byte per connection this often")
	for_ := flag.Duration("for", 3*time.Minute, "how long to keep at it")
	flag.Parse()
	var open, dialed atomic.Int64
	for range *n {
		go func() {
			c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
			if err != nil {
				return
			}
			dialed.Add(1)
			open.Add(1)
			defer open.Add(-1)
			defer c.Close()
			if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
				return
			}
			for {
				time.Sleep(*every)
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}()
		time.Sleep(time.Millisecond)
	}
	end := time.After(*for_)
	t := time.NewTicker(5 * time.Second)
	for {
		select {
		case <-t.C:
			fmt.Fprintf(os.Stderr, "slowloris: %d dialed, %d open\n", dialed.Load(), open.Load())
		case <-end:
			return
		}
	}
}
