package testutil

import (
	"net"
	"sync/atomic"
)

// Flood is a hostile peer's endless answer, for the clients' bounded-read
// tests: Send writes head, then copies of chunk, until the client stops
// reading (the write fails) or Limit bytes are out in all. Written counts
// the bytes the client let through: a client that bounds its reads stops
// it far below Limit.
type Flood struct {
	Limit   int64
	Written atomic.Int64
}

// Send floods c; it returns when c fails or the limit is reached.
func (f *Flood) Send(c net.Conn, head string, chunk []byte) {
	n, err := c.Write([]byte(head))
	f.Written.Add(int64(n))
	for err == nil && f.Written.Load() < f.Limit {
		n, err = c.Write(chunk)
		f.Written.Add(int64(n))
	}
}
