package smtpsink

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// RecipientKey is the 32-bit key a recipient address is recorded under:
// FNV-1a of the lower-cased address (the delivery ledger's remote key).
func RecipientKey(addr string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(addr)))
	return h.Sum32()
}

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
	buf      bytes.Buffer
	n        int64
	lastRecv int64
	started  time.Time
}

// NewRecord returns an empty record started now.
func NewRecord() *Record { return &Record{started: time.Now()} }

// Add records one arrival (Options.OnMessage).
func (r *Record) Add(a Arrival) {
	var tmp [binary.MaxVarintLen64]byte
	r.mu.Lock()
	defer r.mu.Unlock()
	recv := a.Received.UnixNano()
	id := a.ID
	if len(id) > 255 {
		id = id[:255]
	}
	r.buf.WriteByte(byte(len(id)))
	r.buf.WriteString(id)
	r.buf.Write(tmp[:binary.PutVarint(tmp[:], recv-r.lastRecv)])
	r.lastRecv = recv
	var flags byte
	if a.Sum != "" && a.Sum != a.BodySum {
		flags = 1
	}
	r.buf.WriteByte(flags)
	r.buf.Write(tmp[:binary.PutUvarint(tmp[:], uint64(len(a.Recipients)))])
	for _, to := range a.Recipients {
		binary.BigEndian.PutUint32(tmp[:4], RecipientKey(to))
		r.buf.Write(tmp[:4])
	}
	r.n++
}

// RecordedArrival is one arrival as a Record keeps it.
type RecordedArrival struct {
	ID         string
	Received   time.Time
	Corrupt    bool     // body checksum differed from the stamped one
	Recipients []uint32 // RecipientKey of each RCPT TO
}

// SinkReport is what `mailbench sink --json` writes: the sink's totals, its
// relay delays and every arrival (format: docs/distributed.md).
type SinkReport struct {
	Started, Ended time.Time
	Counts         Counts
	RelayDelay     *hdrhistogram.Histogram // µs; nil when none
	Arrivals       []RecordedArrival
}

type jsonSinkReport struct {
	Tool          string `json:"tool"` // "mailbench-sink"
	SchemaVersion int    `json:"schema_version"`
	Started       string `json:"started"`
	Ended         string `json:"ended"`
	Connections   int64  `json:"connections"`
	Messages      int64  `json:"messages"`
	Recipients    int64  `json:"recipients"`
	Bytes         int64  `json:"bytes"`
	Rejected      int64  `json:"rejected"`
	Errors        int64  `json:"errors"`
	// RelayDelay: HdrHistogram V2 compressed base64, µs ("" when none).
	RelayDelay string `json:"relay_delay_histogram,omitempty"`
	// ArrivalCount and Arrivals: the recorded arrivals, a raw-deflate
	// compressed byte stream in base64.
	ArrivalCount int64  `json:"arrival_count"`
	Arrivals     string `json:"arrivals"`
}

// WriteJSON writes the record with s's counts and relay delays (s may be
// nil) as the sink's JSON report.
func (r *Record) WriteJSON(w io.Writer, s *Sink) error {
	r.mu.Lock()
	raw := bytes.Clone(r.buf.Bytes())
	n := r.n
	r.mu.Unlock()
	j := jsonSinkReport{Tool: "mailbench-sink", SchemaVersion: 1, ArrivalCount: n,
		Started: r.started.UTC().Format(time.RFC3339Nano), Ended: time.Now().UTC().Format(time.RFC3339Nano)}
	if s != nil {
		c := s.Counts()
		j.Connections, j.Messages, j.Recipients, j.Bytes, j.Rejected, j.Errors = c.Connections, c.Messages, c.Recipients, c.Bytes, c.Rejected, c.Errors
		if h := s.RelayDelay(); h != nil && h.TotalCount() > 0 {
			enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			if err != nil {
				return fmt.Errorf("sink report: %w", err)
			}
			j.RelayDelay = string(enc)
		}
	}
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestSpeed)
	fw.Write(raw)
	fw.Close()
	j.Arrivals = base64.StdEncoding.EncodeToString(z.Bytes())
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// MaxSinkReport bounds what ReadSinkReport reads (the JSON file) and
// decompresses (the arrivals).
const MaxSinkReport = 1 << 30

// ReadSinkReport reads what WriteJSON wrote, strictly.
func ReadSinkReport(rd io.Reader) (*SinkReport, error) {
	dec := json.NewDecoder(io.LimitReader(rd, MaxSinkReport))
	dec.DisallowUnknownFields()
	var j jsonSinkReport
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("sink report: %w", err)
	}
	if j.Tool != "mailbench-sink" || j.SchemaVersion != 1 {
		return nil, fmt.Errorf("sink report: not a mailbench sink report of schema 1 (tool %q, schema %d)", j.Tool, j.SchemaVersion)
	}
	out := &SinkReport{Counts: Counts{Connections: j.Connections, Messages: j.Messages, Recipients: j.Recipients,
		Bytes: j.Bytes, Rejected: j.Rejected, Errors: j.Errors}}
	var err error
	if out.Started, err = time.Parse(time.RFC3339Nano, j.Started); err != nil {
		return nil, fmt.Errorf("sink report: started: %w", err)
	}
	if out.Ended, err = time.Parse(time.RFC3339Nano, j.Ended); err != nil {
		return nil, fmt.Errorf("sink report: ended: %w", err)
	}
	if j.RelayDelay != "" {
		if out.RelayDelay, err = hdrhistogram.Decode([]byte(j.RelayDelay)); err != nil {
			return nil, fmt.Errorf("sink report: relay delay: %w", err)
		}
	}
	z, err := base64.StdEncoding.DecodeString(j.Arrivals)
	if err != nil {
		return nil, fmt.Errorf("sink report: arrivals: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), MaxSinkReport))
	if err != nil {
		return nil, fmt.Errorf("sink report: arrivals: %w", err)
	}
	if out.Arrivals, err = decodeArrivals(raw, j.ArrivalCount); err != nil {
		return nil, fmt.Errorf("sink report: arrivals: %w", err)
	}
	return out, nil
}

var errCorrupt = errors.New("truncated or corrupt arrival stream")

func decodeArrivals(raw []byte, n int64) ([]RecordedArrival, error) {
	if n < 0 || n > int64(len(raw)) {
		return nil, errCorrupt
	}
	out := make([]RecordedArrival, 0, n)
	var recv int64
	for len(raw) > 0 {
		l := int(raw[0])
		if len(raw) < 1+l+1 {
			return nil, errCorrupt
		}
		a := RecordedArrival{ID: string(raw[1 : 1+l])}
		raw = raw[1+l:]
		d, k := binary.Varint(raw)
		if k <= 0 || len(raw) < k+1 {
			return nil, errCorrupt
		}
		recv += d
		a.Received = time.Unix(0, recv)
		a.Corrupt = raw[k]&1 != 0
		raw = raw[k+1:]
		cnt, k := binary.Uvarint(raw)
		if k <= 0 || cnt > uint64(len(raw)-k)/4 {
			return nil, errCorrupt
		}
		raw = raw[k:]
		a.Recipients = make([]uint32, cnt)
		for i := range a.Recipients {
			a.Recipients[i] = binary.BigEndian.Uint32(raw[4*i:])
		}
		raw = raw[4*cnt:]
		out = append(out, a)
	}
	if int64(len(out)) != n {
		return nil, fmt.Errorf("%d arrivals, the header says %d", len(out), n)
	}
	return out, nil
}
