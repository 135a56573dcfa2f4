package smtpsink

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/delivery"
)

// Record keeps what a standalone sink received, by message id, for the
// reconciliation of a sharded run (docs/distributed.md): every load
// generator's remote deliveries are checked against it after the run, so
// mail relayed here is never counted lost because it reached another
// process than the one that sent it. Bodies are not kept: an arrival is its
// id, the time it arrived, whether its body checksum matched the stamped
// one, and a 32-bit key per recipient, appended to one compact byte
// stream (about 30 bytes per message plus 4 per recipient). Add is its
// OnMessage hook; it is safe for concurrent use.
type Record struct {
	mu       sync.Mutex
	buf      []byte
	n        int64
	lastRecv int64
	started  time.Time
}

// NewRecord returns an empty record started now.
func NewRecord() *Record { return &Record{started: time.Now()} }

// Add records one arrival (Options.OnMessage).
func (r *Record) Add(a delivery.Arrival) {
	recv := a.Received.UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = delivery.AppendArrival(r.buf, r.lastRecv, a.ID, recv, a.Sum != "" && a.Sum != a.BodySum, a.Recipients)
	r.lastRecv = recv
	r.n++
}

// WriteJSON writes the record with s's counts and relay delays (s may be
// nil) as the sink's JSON report (delivery.ReadSinkReport reads it).
func (r *Record) WriteJSON(w io.Writer, s *Sink) error {
	r.mu.Lock()
	raw := bytes.Clone(r.buf)
	n := r.n
	r.mu.Unlock()
	var c delivery.SinkCounts
	var relay *hdrhistogram.Histogram
	if s != nil {
		sc := s.Counts()
		c = delivery.SinkCounts{Connections: sc.Connections, Messages: sc.Messages, Recipients: sc.Recipients, Bytes: sc.Bytes, Rejected: sc.Rejected, Errors: sc.Errors}
		relay = s.RelayDelay()
	}
	return delivery.WriteSinkReport(w, r.started, time.Now(), c, relay, n, raw)
}
