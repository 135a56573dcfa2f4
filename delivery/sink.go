package delivery

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
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// RecipientKey is the 32-bit key a recipient address is recorded under:
// FNV-1a of the lower-cased address (the ledger's remote key, the sink's
// record).
func RecipientKey(addr string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(addr)))
	return h.Sum32()
}

// RecordedArrival is one message a standalone sink received, as its
// record keeps it: no body, only what reconciliation needs.
type RecordedArrival struct {
	ID         string
	Received   time.Time
	Corrupt    bool     // body checksum differed from the stamped one
	Recipients []uint32 // RecipientKey of each RCPT TO
}

// SinkCounts are a standalone sink's totals, as its report carries them.
type SinkCounts struct {
	Connections int64 // connections accepted and served
	Messages    int64 // messages accepted
	Recipients  int64 // recipients of accepted messages
	Bytes       int64 // size of accepted messages
	Rejected    int64 // messages refused by the sink's fault mode
	Errors      int64 // message transfers that failed
}

// SinkReport is what `mailbench sink --json` writes: the sink's totals, its
// relay delays and every arrival (format: docs/distributed.md).
type SinkReport struct {
	Started, Ended time.Time
	Counts         SinkCounts
	RelayDelay     *hdrhistogram.Histogram // µs; nil when none
	Arrivals       []RecordedArrival
}

// AppendArrival appends one arrival to an arrival stream, the compact
// encoding a sink's record keeps in memory and its report carries (about
// 30 bytes per message plus 4 per recipient): prevReceived is the
// previous arrival's Received in UnixNano (0 for the first). An id longer
// than 255 bytes is cut. It doesn't allocate beyond growing dst.
func AppendArrival(dst []byte, prevReceived int64, id string, received int64, corrupt bool, recipients []string) []byte {
	if len(id) > 255 {
		id = id[:255]
	}
	dst = append(dst, byte(len(id)))
	dst = append(dst, id...)
	dst = binary.AppendVarint(dst, received-prevReceived)
	var flags byte
	if corrupt {
		flags = 1
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(recipients)))
	for _, to := range recipients {
		dst = binary.BigEndian.AppendUint32(dst, RecipientKey(to))
	}
	return dst
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
	// compressed arrival stream (AppendArrival) in base64.
	ArrivalCount int64  `json:"arrival_count"`
	Arrivals     string `json:"arrivals"`
}

// WriteSinkReport writes a sink's JSON report: its span, counts and relay
// delays (nil: none), and n arrivals as the stream AppendArrival built.
func WriteSinkReport(w io.Writer, started, ended time.Time, c SinkCounts, relay *hdrhistogram.Histogram, n int64, stream []byte) error {
	j := jsonSinkReport{Tool: "mailbench-sink", SchemaVersion: 1, ArrivalCount: n,
		Started: started.UTC().Format(time.RFC3339Nano), Ended: ended.UTC().Format(time.RFC3339Nano),
		Connections: c.Connections, Messages: c.Messages, Recipients: c.Recipients, Bytes: c.Bytes, Rejected: c.Rejected, Errors: c.Errors}
	if relay != nil && relay.TotalCount() > 0 {
		enc, err := relay.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return fmt.Errorf("sink report: %w", err)
		}
		j.RelayDelay = string(enc)
	}
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestSpeed)
	fw.Write(stream)
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
	out := &SinkReport{Counts: SinkCounts{Connections: j.Connections, Messages: j.Messages, Recipients: j.Recipients,
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
