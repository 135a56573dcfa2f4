// This file aggregates where the time of IMAP Connect and SMTP
// Connect went: TCP connect, TLS handshake, greeting (IMAP greeting, SMTP
// banner + EHLO) and authentication, with counts of TLS handshakes and of
// those that resumed an earlier session.
//
// A Breakdown is fed observations (it is a measure.Observer) and hands out
// Snapshots, which the report prints (WriteText) or stores (JSON). Nothing
// here performs I/O except on the io.Writer given to WriteText.

package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/measure"
)

// ConnectFunctions are the functions a Breakdown aggregates, in report order.
var ConnectFunctions = []measure.Function{measure.IMAPConnect, measure.SMTPConnect}

// Breakdown aggregates connect phases. The zero value is not usable; call
// New. It is safe for concurrent use.
type Breakdown struct {
	mu    sync.Mutex
	byFn  map[measure.Function]*connAcc
	order []measure.Function
}

type connAcc struct {
	connects, failed, handshakes, resumed int64
	assessed, stalled                     int64
	tcp, tls, greeting, auth              *hdrhistogram.Histogram
	handshake, first, clear               *hdrhistogram.Histogram
}

func newConnAcc() *connAcc {
	return &connAcc{
		tcp: NewHistogram(), tls: NewHistogram(),
		greeting: NewHistogram(), auth: NewHistogram(),
		handshake: NewHistogram(), first: NewHistogram(), clear: NewHistogram(),
	}
}

// New returns an empty Breakdown.
func NewBreakdown() *Breakdown {
	b := &Breakdown{byFn: map[measure.Function]*connAcc{}}
	for _, f := range ConnectFunctions {
		b.byFn[f] = newConnAcc()
	}
	return b
}

// Observe records o when it is an IMAP Connect or SMTP Connect observation
// with connect phases (o.Connect != nil); it ignores every other one. It
// records whatever it is given: filter by window before (see
// InWindow).
//
// Every such observation counts as a connect, a failed one also as failed.
// Every completed TLS handshake counts as a handshake (and as resumed when it
// resumed a session), whether the connect then succeeded or not. The phase
// histograms hold successful connects only, so that a part is never
// understated by failures that did not reach it: TCP and Greeting of each,
// TLS of those with TLS, Auth of those that authenticated (Auth > 0).
func (b *Breakdown) Observe(o measure.Observation) {
	if o.Connect == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.byFn[o.Function]
	if a == nil {
		return
	}
	p := o.Connect
	a.connects++
	if p.TLSUsed {
		a.handshakes++
		if p.Resumed {
			a.resumed++
		}
	}
	if o.Class != measure.OK {
		a.failed++
		return
	}
	RecordDuration(a.tcp, p.TCP)
	RecordDuration(a.greeting, p.Greeting)
	if p.TLSUsed {
		RecordDuration(a.tls, p.TLS)
		if p.Handshake > 0 {
			RecordDuration(a.handshake, p.Handshake)
		}
		if p.FirstExchange > 0 {
			RecordDuration(a.first, p.FirstExchange)
		}
		if p.ClearExchange > 0 {
			RecordDuration(a.clear, p.ClearExchange)
		}
		if stalled, assessed := p.Stalled(); assessed {
			a.assessed++
			if stalled {
				a.stalled++
			}
		}
	}
	if p.Auth > 0 {
		RecordDuration(a.auth, p.Auth)
	}
}

// Snapshot returns a copy of what was recorded so far. It doesn't block
// Observe for longer than the copy takes.
func (b *Breakdown) Snapshot() *ConnectSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &ConnectSnapshot{}
	for _, f := range ConnectFunctions {
		a := b.byFn[f]
		s.Functions = append(s.Functions, FunctionBreakdown{
			Function: f, Connects: a.connects, Failed: a.failed,
			Handshakes: a.handshakes, Resumed: a.resumed,
			TCP: partOf(a.tcp), TLS: partOf(a.tls), Greeting: partOf(a.greeting), Auth: partOf(a.auth),
			Handshake: partOf(a.handshake), FirstExchange: partOf(a.first), ClearExchange: partOf(a.clear),
			StallAssessed: a.assessed, Stalled: a.stalled,
		})
	}
	return s
}

func partOf(h *hdrhistogram.Histogram) PartStats {
	p := PartStats{Count: h.TotalCount(), Histogram: hdrhistogram.Import(h.Export())}
	p.fill()
	return p
}

// Snapshot is the connect breakdown of a run: one FunctionBreakdown per
// entry of Functions, in that order. It is plain data, JSON-able: each
// part's histogram is stored encoded (EncodeHistogram) next to its
// percentiles, so MergeConnect works on snapshots read back from JSON.
type ConnectSnapshot struct {
	Functions []FunctionBreakdown `json:"functions"`
}

// FunctionBreakdown is the breakdown of one connect function.
type FunctionBreakdown struct {
	Function   measure.Function `json:"function"`
	Connects   int64            `json:"connects"`   // observations with phases
	Failed     int64            `json:"failed"`     // of which failed
	Handshakes int64            `json:"handshakes"` // completed TLS handshakes
	Resumed    int64            `json:"resumed"`    // of which resumed a session
	TCP        PartStats        `json:"tcp"`
	TLS        PartStats        `json:"tls"`
	Greeting   PartStats        `json:"greeting"`
	Auth       PartStats        `json:"auth"`
	// The TLS attribution of successful TLS connects (measure.ConnectPhases;
	// docs/tls.md): the handshake alone, the first exchange after it and
	// the clear-text STARTTLS exchange before it; StallAssessed connects
	// could be judged (STARTTLS), Stalled of them stalled after the
	// handshake (measure.ConnectPhases.Stalled).
	Handshake     PartStats `json:"handshake"`
	FirstExchange PartStats `json:"first_exchange"`
	ClearExchange PartStats `json:"clear_exchange"`
	StallAssessed int64     `json:"stall_assessed"`
	Stalled       int64     `json:"stalled"`
}

// DelayedACKStall reports whether f carries the delayed-ACK signature: at
// least 10 assessed connects, and half of them or more stalled on the first
// exchange after the TLS handshake while the clear-text exchange was quick
// (measure.ConnectPhases.Stalled): time spent waiting for an
// acknowledgement, not on TLS computation.
func (f FunctionBreakdown) DelayedACKStall() bool {
	return f.StallAssessed >= 10 && 2*f.Stalled >= f.StallAssessed
}

// ResumedPercent is Resumed as a percentage of Handshakes, and ok false
// when there was no handshake.
func (f FunctionBreakdown) ResumedPercent() (pct float64, ok bool) {
	if f.Handshakes == 0 {
		return 0, false
	}
	return 100 * float64(f.Resumed) / float64(f.Handshakes), true
}

// Function returns the breakdown of fn, ok false when s has none.
func (s *ConnectSnapshot) Function(fn measure.Function) (FunctionBreakdown, bool) {
	if s != nil {
		for _, f := range s.Functions {
			if f.Function == fn {
				return f, true
			}
		}
	}
	return FunctionBreakdown{}, false
}

// PartStats summarizes one phase over the successful connects that had it.
// The percentiles are in microseconds (compliance's histogram geometry).
// In JSON it is {count, p50_us, p95_us, max_us, histogram}, histogram
// encoded and omitted when empty or absent.
type PartStats struct {
	Count int64 `json:"count"`
	P50US int64 `json:"p50_us"`
	P95US int64 `json:"p95_us"`
	MaxUS int64 `json:"max_us"`
	// Histogram holds every recorded value; nil when read from a report
	// written before it was stored (such snapshots don't merge).
	Histogram *hdrhistogram.Histogram `json:"-"`
}

type jsonPart struct {
	Count     int64  `json:"count"`
	P50US     int64  `json:"p50_us"`
	P95US     int64  `json:"p95_us"`
	MaxUS     int64  `json:"max_us"`
	Histogram string `json:"histogram,omitempty"`
}

// MarshalJSON writes p with its histogram encoded.
func (p PartStats) MarshalJSON() ([]byte, error) {
	j := jsonPart{Count: p.Count, P50US: p.P50US, P95US: p.P95US, MaxUS: p.MaxUS}
	if p.Histogram != nil && p.Histogram.TotalCount() > 0 {
		enc, err := EncodeHistogram(p.Histogram)
		if err != nil {
			return nil, err
		}
		j.Histogram = enc
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote, rejecting unknown fields,
// negative figures, histograms not of mailbench's geometry
// (DecodeHistogram) and histograms whose count is not Count.
func (p *PartStats) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j jsonPart
	if err := dec.Decode(&j); err != nil {
		return err
	}
	if j.Count < 0 || j.P50US < 0 || j.P95US < 0 || j.MaxUS < 0 {
		return errors.New("connect part: negative figure")
	}
	*p = PartStats{Count: j.Count, P50US: j.P50US, P95US: j.P95US, MaxUS: j.MaxUS}
	if j.Histogram != "" {
		h, err := DecodeHistogram(j.Histogram)
		if err != nil {
			return fmt.Errorf("connect part: %w", err)
		}
		if h.TotalCount() != j.Count {
			return fmt.Errorf("connect part: histogram of %d values, count %d", h.TotalCount(), j.Count)
		}
		p.Histogram = h
	}
	return nil
}

func (p *PartStats) fill() {
	if p.Histogram == nil || p.Histogram.TotalCount() == 0 {
		p.P50US, p.P95US, p.MaxUS = 0, 0, 0
		return
	}
	p.P50US = p.Histogram.ValueAtQuantile(50)
	p.P95US = p.Histogram.ValueAtQuantile(95)
	p.MaxUS = p.Histogram.Max()
}

// P50 is the median as a duration.
func (p PartStats) P50() time.Duration { return time.Duration(p.P50US) * time.Microsecond }

// P95 is the 95th percentile as a duration.
func (p PartStats) P95() time.Duration { return time.Duration(p.P95US) * time.Microsecond }

// Merge combines the snapshots of the shards of one run into a new
// Snapshot; it doesn't modify its arguments. Counts add up; the parts merge
// exactly when every shard has its histograms, otherwise Merge fails.
func MergeConnect(snaps ...*ConnectSnapshot) (*ConnectSnapshot, error) {
	b := NewBreakdown()
	for _, s := range snaps {
		if s == nil {
			continue
		}
		for _, f := range s.Functions {
			a := b.byFn[f.Function]
			if a == nil {
				return nil, fmt.Errorf("connstats: unknown function %q", f.Function)
			}
			a.connects += f.Connects
			a.failed += f.Failed
			a.handshakes += f.Handshakes
			a.resumed += f.Resumed
			a.assessed += f.StallAssessed
			a.stalled += f.Stalled
			for _, pair := range []struct {
				dst *hdrhistogram.Histogram
				src PartStats
			}{{a.tcp, f.TCP}, {a.tls, f.TLS}, {a.greeting, f.Greeting}, {a.auth, f.Auth},
				{a.handshake, f.Handshake}, {a.first, f.FirstExchange}, {a.clear, f.ClearExchange}} {
				if pair.src.Count == 0 {
					continue
				}
				if pair.src.Histogram == nil {
					return nil, fmt.Errorf("connstats: %s: a shard has no histogram to merge", f.Function)
				}
				pair.dst.Merge(pair.src.Histogram)
			}
		}
	}
	return b.Snapshot(), nil
}

// WriteText renders s as the table "Connect time breakdown": per connect
// function the connects, p50/p95 of each part, TLS handshakes and the share
// resumed. A part that never happened prints "-". A nil or empty Snapshot
// prints nothing.
func (s *ConnectSnapshot) WriteText(w io.Writer) error { return s.WriteTextWidth(w, connectWideWidth) }

// connectWideWidth is the narrowest width that the breakdown's table of a
// row per function fits.
const connectWideWidth = 100

// WriteTextWidth is WriteText for width columns: below connectWideWidth
// the table is turned, a row per part and a column per function.
func (s *ConnectSnapshot) WriteTextWidth(w io.Writer, width int) error {
	if width < connectWideWidth {
		return s.writeNarrow(w)
	}
	if s == nil {
		return nil
	}
	any := false
	for _, f := range s.Functions {
		any = any || f.Connects > 0
	}
	if !any {
		return nil
	}
	if _, err := fmt.Fprintln(w, "Connect time breakdown (successful connects; p50 / p95; failed connects by class in the table's errors)"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "function\tsucceeded\tfailed\tTCP\tTLS\tgreeting\tauth\thandshakes\tresumed")
	for _, f := range s.Functions {
		if f.Connects == 0 {
			continue
		}
		resumed := "-"
		if pct, ok := f.ResumedPercent(); ok {
			resumed = fmt.Sprintf("%d (%.1f%%)", f.Resumed, pct)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", f.Function, f.Connects-f.Failed, f.Failed,
			FormatPart(f.TCP), FormatPart(f.TLS), FormatPart(f.Greeting), FormatPart(f.Auth), f.Handshakes, resumed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range s.Functions {
		if line := f.StallLine(); line != "" {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeNarrow is the breakdown as a row per part and a column per
// function.
func (s *ConnectSnapshot) writeNarrow(w io.Writer) error {
	var fs []FunctionBreakdown
	if s != nil {
		for _, f := range s.Functions {
			if f.Connects > 0 {
				fs = append(fs, f)
			}
		}
	}
	if len(fs) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "Connect time breakdown (successful connects; p50 / p95; failed connects by class\nin the table's errors)"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, cell func(FunctionBreakdown) string) {
		fmt.Fprint(tw, name)
		for _, f := range fs {
			fmt.Fprint(tw, "\t"+cell(f))
		}
		fmt.Fprintln(tw)
	}
	row("", func(f FunctionBreakdown) string { return string(f.Function) })
	row("succeeded", func(f FunctionBreakdown) string { return fmt.Sprint(f.Connects - f.Failed) })
	row("failed", func(f FunctionBreakdown) string { return fmt.Sprint(f.Failed) })
	row("TCP", func(f FunctionBreakdown) string { return FormatPart(f.TCP) })
	row("TLS", func(f FunctionBreakdown) string { return FormatPart(f.TLS) })
	row("greeting", func(f FunctionBreakdown) string { return FormatPart(f.Greeting) })
	row("auth", func(f FunctionBreakdown) string { return FormatPart(f.Auth) })
	row("handshakes", func(f FunctionBreakdown) string { return fmt.Sprint(f.Handshakes) })
	row("resumed", func(f FunctionBreakdown) string {
		if pct, ok := f.ResumedPercent(); ok {
			return fmt.Sprintf("%d (%.1f%%)", f.Resumed, pct)
		}
		return "-"
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range fs {
		if line := f.StallLine(); line != "" {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	return nil
}

// StallLine says where the TLS time of f's connects went: the handshake
// alone, the first exchange after it against the clear-text STARTTLS
// exchange, how many connects stalled there and, with the delayed-ACK
// signature (DelayedACKStall), that it is no TLS computation ("" without
// TLS connects).
func (f FunctionBreakdown) StallLine() string {
	if f.Handshake.Count == 0 {
		return ""
	}
	line := fmt.Sprintf("  %s TLS: handshake %s, first exchange after it %s", f.Function, FormatPart(f.Handshake), FormatPart(f.FirstExchange))
	if f.StallAssessed == 0 {
		return line + " (implicit TLS: no clear-text exchange to compare with)"
	}
	line += fmt.Sprintf(", clear-text STARTTLS exchange %s; %d of %d connects stalled there (≥ %v and ≥ %d× the clear-text exchange)",
		FormatPart(f.ClearExchange), f.Stalled, f.StallAssessed, measure.StallMin, measure.StallRatio)
	if f.DelayedACKStall() {
		line += ": a TCP delayed-ACK stall after the TLS handshake, not TLS computation (docs/tls.md)"
	}
	return line
}

// FormatPart renders a part as "p50 / p95" in milliseconds, or "-" when it
// has no value.
func FormatPart(p PartStats) string {
	if p.Count == 0 {
		return "-"
	}
	return FormatMS(p.P50()) + " / " + FormatMS(p.P95())
}

// FormatMS renders d in milliseconds with a precision that suits its size.
func FormatMS(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.2fms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.0fms", ms)
}
