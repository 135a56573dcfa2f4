package metrics

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"

	"github.com/mailbench/mailbench/measure"
)

const msDur = time.Millisecond

func obs(fn measure.Function, class measure.ErrorClass, p *measure.ConnectPhases) measure.Observation {
	return measure.Observation{Function: fn, Class: class, Connect: p}
}

// feed is a fixed mix: IMAP over TLS (half resumed), SMTP in plaintext
// with AUTH, one failed connect of each, and observations to ignore.
func feed(b *Breakdown) {
	for i := range 10 {
		b.Observe(obs(measure.IMAPConnect, measure.OK, &measure.ConnectPhases{
			TCP: time.Duration(i+1) * 100 * time.Microsecond, TLS: time.Duration(i+1) * msDur,
			Greeting: 2 * msDur, Auth: 3 * msDur, TLSUsed: true, Resumed: i%2 == 1,
		}))
		b.Observe(obs(measure.SMTPConnect, measure.OK, &measure.ConnectPhases{
			TCP: 200 * time.Microsecond, Greeting: time.Duration(i+1) * msDur, Auth: 20 * msDur,
		}))
	}
	// Failed after a handshake: counts as a handshake and a failure, no parts.
	b.Observe(obs(measure.IMAPConnect, measure.Protocol, &measure.ConnectPhases{TCP: time.Second, TLS: time.Second, TLSUsed: true}))
	// Failed handshake.
	b.Observe(obs(measure.SMTPConnect, measure.TLS, &measure.ConnectPhases{TCP: time.Second}))
	// Ignored: no phases, or not a connect function.
	b.Observe(obs(measure.IMAPConnect, measure.Connection, nil))
	b.Observe(obs(measure.IMAPSelectInbox, measure.OK, &measure.ConnectPhases{TCP: time.Hour}))
}

func TestObserve(t *testing.T) {
	b := NewBreakdown()
	feed(b)
	s := b.Snapshot()
	tests := []struct {
		fn                                    measure.Function
		connects, failed, handshakes, resumed int64
		tcp, tls, greeting, auth              int64 // counts
		tlsP95, greetingP50                   time.Duration
	}{
		{measure.IMAPConnect, 11, 1, 11, 5, 10, 10, 10, 10, 10 * msDur, 2 * msDur},
		{measure.SMTPConnect, 11, 1, 0, 0, 10, 0, 10, 10, 0, 5 * msDur},
	}
	for _, tt := range tests {
		f, ok := s.Function(tt.fn)
		if !ok {
			t.Fatalf("no %s", tt.fn)
		}
		if f.Connects != tt.connects || f.Failed != tt.failed || f.Handshakes != tt.handshakes || f.Resumed != tt.resumed {
			t.Errorf("%s counts %+v", tt.fn, f)
		}
		if f.TCP.Count != tt.tcp || f.TLS.Count != tt.tls || f.Greeting.Count != tt.greeting || f.Auth.Count != tt.auth {
			t.Errorf("%s part counts tcp %d tls %d greeting %d auth %d", tt.fn, f.TCP.Count, f.TLS.Count, f.Greeting.Count, f.Auth.Count)
		}
		if !near(f.TLS.P95(), tt.tlsP95) || !near(f.Greeting.P50(), tt.greetingP50) {
			t.Errorf("%s TLS p95 %v greeting p50 %v, want %v %v", tt.fn, f.TLS.P95(), f.Greeting.P50(), tt.tlsP95, tt.greetingP50)
		}
		if f.TCP.MaxUS >= int64(time.Second/time.Microsecond) {
			t.Errorf("%s: a failed connect's TCP time reached the histogram", tt.fn)
		}
	}
	imap, _ := s.Function(measure.IMAPConnect)
	if pct, ok := imap.ResumedPercent(); !ok || pct < 45.4 || pct > 45.5 {
		t.Errorf("IMAP resumed %% = %v, %v; want 5/11", pct, ok)
	}
	smtp, _ := s.Function(measure.SMTPConnect)
	if _, ok := smtp.ResumedPercent(); ok {
		t.Error("resumed percent without handshakes")
	}
	// The snapshot is a copy.
	b.Observe(obs(measure.SMTPConnect, measure.OK, &measure.ConnectPhases{TCP: msDur}))
	if f, _ := s.Function(measure.SMTPConnect); f.Connects != 11 || f.TCP.Histogram.TotalCount() != 10 {
		t.Error("snapshot changed after a later Observe")
	}
}

// near allows the histogram's three significant digits.
func near(got, want time.Duration) bool {
	d := got - want
	return d >= -want/500 && d <= want/500
}

func TestConcurrentObserve(t *testing.T) {
	b := NewBreakdown()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 500 {
				b.Observe(obs(measure.IMAPConnect, measure.OK, &measure.ConnectPhases{TCP: msDur, TLSUsed: true, TLS: msDur, Resumed: true}))
				if i%250 == 0 {
					_ = b.Snapshot()
				}
			}
		})
	}
	wg.Wait()
	if f, _ := b.Snapshot().Function(measure.IMAPConnect); f.Connects != 4000 || f.Resumed != 4000 || f.TLS.Count != 4000 {
		t.Errorf("after 8×500 concurrent observations: %+v", f)
	}
}

func TestMerge(t *testing.T) {
	whole, a, c := NewBreakdown(), NewBreakdown(), NewBreakdown()
	feed(whole)
	feed(whole)
	feed(a)
	feed(c)
	got, err := MergeConnect(a.Snapshot(), nil, c.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	want := whole.Snapshot()
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) {
		t.Errorf("merge of two shards\n%s\nwant\n%s", gj, wj)
	}
	if !bytes.Contains(wj, []byte(`"histogram":"HISTF`)) {
		t.Errorf("JSON snapshot without histograms: %s", wj)
	}
	// A snapshot read back from JSON keeps its histograms: merging the
	// shards read back gives the same as merging them in memory.
	unmarshal := func(b []byte) *ConnectSnapshot {
		var s ConnectSnapshot
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	back := unmarshal(wj)
	if bj, _ := json.Marshal(back); !bytes.Equal(bj, wj) {
		t.Errorf("JSON round trip changed the snapshot:\n%s\n%s", bj, wj)
	}
	aj, _ := json.Marshal(a.Snapshot())
	cj, _ := json.Marshal(c.Snapshot())
	fromJSON, err := MergeConnect(unmarshal(aj), unmarshal(cj))
	if err != nil {
		t.Fatal(err)
	}
	if fj, _ := json.Marshal(fromJSON); !bytes.Equal(fj, wj) {
		t.Errorf("merge of shards read from JSON\n%s\nwant\n%s", fj, wj)
	}
	// An older report stored no histograms: merging it fails.
	var oldPart PartStats
	if err := json.Unmarshal([]byte(`{"count":1,"p50_us":5,"p95_us":5,"max_us":5}`), &oldPart); err != nil || oldPart.Histogram != nil || oldPart.P95US != 5 {
		t.Errorf("older part read as %+v, %v", oldPart, err)
	}
	var stripped ConnectSnapshot
	if err := json.Unmarshal(wj, &stripped); err != nil {
		t.Fatal(err)
	}
	for i := range stripped.Functions {
		f := &stripped.Functions[i]
		for _, p := range []*PartStats{&f.TCP, &f.TLS, &f.Greeting, &f.Auth} {
			p.Histogram = nil
		}
	}
	if _, err := MergeConnect(&stripped, got); err == nil {
		t.Error("merge without histograms succeeded")
	}
	for _, bad := range []string{
		`{"count":1,"p50_us":0,"p95_us":0,"max_us":0,"extra":1}`,
		`{"count":-1,"p50_us":0,"p95_us":0,"max_us":0}`,
		`{"count":2,"p50_us":0,"p95_us":0,"max_us":0,"histogram":"` + encodedOne(t) + `"}`,
	} {
		var p PartStats
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("part %s read without error", bad)
		}
	}
	if _, err := MergeConnect(&ConnectSnapshot{Functions: []FunctionBreakdown{{Function: "IMAP LIST"}}}); err == nil {
		t.Error("merge of an unknown function succeeded")
	}
}

// feedStall is SMTP over STARTTLS that stalls 40 ms after the handshake on
// 6 of 8 connects (the delayed-ACK signature), IMAP over implicit TLS.
func feedStall(b *Breakdown) {
	b.Observe(obs(measure.IMAPConnect, measure.OK, &measure.ConnectPhases{
		TCP: 100 * time.Microsecond, TLS: 3 * msDur, Greeting: 2 * msDur, TLSUsed: true,
		Handshake: 3 * msDur, FirstExchange: 2 * msDur,
	}))
	for i := range 8 {
		first := 44 * msDur
		if i >= 6 {
			first = msDur
		}
		b.Observe(obs(measure.SMTPConnect, measure.OK, &measure.ConnectPhases{
			TCP: 200 * time.Microsecond, TLS: 3*msDur + first, Greeting: 2 * msDur, TLSUsed: true,
			Handshake: 2 * msDur, ClearExchange: 300 * time.Microsecond, FirstExchange: first,
		}))
	}
}

func TestWriteTextGolden(t *testing.T) {
	b := NewBreakdown()
	feed(b)
	tests := []struct {
		name string
		snap *ConnectSnapshot
	}{
		{"mixed", b.Snapshot()},
		{"stall", stallSnapshot()},
		{"empty", NewBreakdown().Snapshot()},
		{"nil", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.snap.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tt.name+".txt"), buf.Bytes())
		})
	}
}

func TestFormatMS(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.00ms"}, {1234 * time.Microsecond, "1.23ms"}, {45600 * time.Microsecond, "45.6ms"}, {1500 * msDur, "1500ms"},
	} {
		if got := FormatMS(tt.d); got != tt.want {
			t.Errorf("FormatMS(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func encodedOne(t *testing.T) string {
	h := NewHistogram()
	RecordDuration(h, time.Millisecond)
	s, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func stallSnapshot() *ConnectSnapshot {
	b := NewBreakdown()
	for range 5 {
		feedStall(b)
	}
	return b.Snapshot()
}

func TestStallAttribution(t *testing.T) {
	b := NewBreakdown()
	feedStall(b)
	s := b.Snapshot()
	smtp, _ := s.Function(measure.SMTPConnect)
	if smtp.StallAssessed != 8 || smtp.Stalled != 6 || smtp.FirstExchange.Count != 8 || smtp.Handshake.Count != 8 {
		t.Fatalf("SMTP: %d of %d stalled, %d first exchanges, %d handshakes", smtp.Stalled, smtp.StallAssessed, smtp.FirstExchange.Count, smtp.Handshake.Count)
	}
	if smtp.DelayedACKStall() {
		t.Error("8 assessed connects are too few for the signature")
	}
	for range 4 {
		feedStall(b) // 40 assessed, 30 stalled
	}
	s = b.Snapshot()
	smtp, _ = s.Function(measure.SMTPConnect)
	if !smtp.DelayedACKStall() || !bytes.Contains([]byte(smtp.StallLine()), []byte("30 of 40 connects stalled there")) ||
		!bytes.Contains([]byte(smtp.StallLine()), []byte("a TCP delayed-ACK stall after the TLS handshake, not TLS computation")) {
		t.Errorf("signature %v, line %q", smtp.DelayedACKStall(), smtp.StallLine())
	}
	imap, _ := s.Function(measure.IMAPConnect)
	if !bytes.Contains([]byte(imap.StallLine()), []byte("implicit TLS: no clear-text exchange to compare with")) || imap.StallAssessed != 0 {
		t.Errorf("IMAP over implicit TLS is not assessed: line %q", imap.StallLine())
	}
	// The figures survive JSON and merge.
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(s); err != nil {
		t.Fatal(err)
	}
	var back ConnectSnapshot
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	m, err := MergeConnect(&back, &back)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := m.Function(measure.SMTPConnect); f.StallAssessed != 80 || f.Stalled != 60 || f.FirstExchange.Count != 80 {
		t.Errorf("merged: %d of %d, %d first exchanges", f.Stalled, f.StallAssessed, f.FirstExchange.Count)
	}
}
