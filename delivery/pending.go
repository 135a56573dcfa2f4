package delivery

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// PendingDelivery is one accepted remote delivery that has not been seen
// arrive: a message sequence number of the run, the recipient's key
// (RecipientKey) and when the message was accepted.
type PendingDelivery struct {
	Seq      uint64
	Key      uint32
	Accepted int64 // UnixNano
}

// Pending is a shard's remote deliveries to reconcile against an external
// sink's record later (docs/distributed.md). In JSON it is an object with
// the run id, the count, and the deliveries as a raw-deflate compressed
// byte stream in base64 (about 5 bytes a delivery).
type Pending struct {
	RunID      uint32
	Deliveries []PendingDelivery
}

// ReconcileSink settles p against the arrivals a sink recorded (the
// arrivals of other runs are skipped): it returns the change to the run's
// Reconciliation — pending deliveries that arrived are relayed, the rest
// lost; a second arrival is a duplicate, a checksum mismatch corrupted, an
// arrival of this run matching no pending delivery unexpected — and calls
// obs with one Delivery Time (remote) observation per delivery that
// arrived (nil obs: none). It doesn't modify p.
func ReconcileSink(p *Pending, arrivals []RecordedArrival, obs measure.Observer) Reconciliation {
	type key struct {
		seq uint64
		rc  uint32
	}
	const (
		seen uint8 = 1 << iota
		dup
		corrupt
	)
	type state struct {
		accepted int64
		flags    uint8
	}
	want := make(map[key]*state, len(p.Deliveries))
	for _, d := range p.Deliveries {
		want[key{d.Seq, d.Key}] = &state{accepted: d.Accepted}
	}
	var d Reconciliation
	for _, a := range arrivals {
		run, seq, ok := ParseID(a.ID)
		if !ok || run != p.RunID {
			continue
		}
		for _, rc := range a.Recipients {
			s := want[key{seq, rc}]
			if s == nil {
				d.Unexpected++
				continue
			}
			if a.Corrupt && s.flags&corrupt == 0 {
				s.flags |= corrupt
				d.Corrupted++
			}
			if s.flags&seen != 0 {
				if s.flags&dup == 0 {
					s.flags |= dup
					d.Duplicated++
				}
				continue
			}
			s.flags |= seen
			d.RelayedRemote++
			if obs != nil {
				recv := a.Received.UnixNano()
				obs.Observe(measure.Observation{Function: measure.DeliveryRemote, Start: time.Unix(0, s.accepted),
					Duration: time.Duration(max(recv-s.accepted, 0))})
			}
		}
	}
	n := int64(len(p.Deliveries))
	d.PendingRemote = -n
	d.LostRemote = n - d.RelayedRemote
	d.Lost = d.LostRemote
	return d
}

type jsonPending struct {
	RunID      string `json:"run_id"` // 8 hex digits, as in message ids
	Count      int64  `json:"count"`
	Deliveries string `json:"deliveries"`
}

// MarshalJSON encodes p compactly (see Pending).
func (p *Pending) MarshalJSON() ([]byte, error) {
	var raw []byte
	var prevSeq uint64
	var prevAt int64
	for _, d := range p.Deliveries {
		raw = binary.AppendUvarint(raw, d.Seq-prevSeq)
		raw = binary.BigEndian.AppendUint32(raw, d.Key)
		raw = binary.AppendVarint(raw, d.Accepted-prevAt)
		prevSeq, prevAt = d.Seq, d.Accepted
	}
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestSpeed)
	fw.Write(raw)
	fw.Close()
	return json.Marshal(jsonPending{RunID: fmt.Sprintf("%08x", p.RunID), Count: int64(len(p.Deliveries)),
		Deliveries: base64.StdEncoding.EncodeToString(z.Bytes())})
}

// UnmarshalJSON decodes what MarshalJSON wrote, strictly.
func (p *Pending) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j jsonPending
	if err := dec.Decode(&j); err != nil {
		return err
	}
	var run uint32
	if _, err := fmt.Sscanf(j.RunID, "%08x", &run); err != nil || len(j.RunID) != 8 {
		return fmt.Errorf("pending remote: run_id %q: want 8 hex digits", j.RunID)
	}
	z, err := base64.StdEncoding.DecodeString(j.Deliveries)
	if err != nil {
		return fmt.Errorf("pending remote: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), 1<<30))
	if err != nil {
		return fmt.Errorf("pending remote: %w", err)
	}
	bad := errors.New("pending remote: truncated or corrupt deliveries")
	if j.Count < 0 || j.Count > int64(len(raw)) {
		return bad
	}
	out := Pending{RunID: run, Deliveries: make([]PendingDelivery, 0, j.Count)}
	var seq uint64
	var at int64
	for len(raw) > 0 {
		ds, k := binary.Uvarint(raw)
		if k <= 0 || len(raw) < k+4 {
			return bad
		}
		key := binary.BigEndian.Uint32(raw[k:])
		raw = raw[k+4:]
		da, k2 := binary.Varint(raw)
		if k2 <= 0 {
			return bad
		}
		raw = raw[k2:]
		seq += ds
		at += da
		if seq == 0 || seq > MaxSeq {
			return bad
		}
		out.Deliveries = append(out.Deliveries, PendingDelivery{Seq: seq, Key: key, Accepted: at})
	}
	if int64(len(out.Deliveries)) != j.Count {
		return fmt.Errorf("pending remote: %d deliveries, the count says %d", len(out.Deliveries), j.Count)
	}
	*p = out
	return nil
}
