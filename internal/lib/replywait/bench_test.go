//go:build unix

package replywait

import (
	"bufio"
	"net"
	"testing"
)

// BenchmarkRequestReply: a request and its reply over loopback TCP, with
// the write held (Wrap) against a plain connection. Its metric
// emptyreads/op counts the read system calls that found nothing per reply,
// the cost this package exists to remove (a plain connection makes about
// one per reply when the server answers after the client reads).
func BenchmarkRequestReply(b *testing.B) {
	for _, held := range []bool{true, false} {
		name := "plain"
		if held {
			name = "held"
		}
		b.Run(name, func(b *testing.B) {
			c := dialServed(b, func(s net.Conn) {
				r := bufio.NewReader(s)
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						return
					}
					if _, err := s.Write(line); err != nil {
						return
					}
				}
			})
			if held {
				c = Wrap(c)
			}
			defer c.Close()
			req := []byte("MAIL FROM:<user1@mailbench.test>\r\n")
			r := bufio.NewReader(c)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := r.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if w, ok := c.(*Conn); ok {
				b.ReportMetric(float64(w.emptyReads)/float64(b.N), "emptyreads/op")
			}
		})
	}
}
