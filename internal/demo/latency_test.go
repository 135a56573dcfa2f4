package demo

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
)

// durations collects the duration of every successful observation.
type durations struct {
	mu sync.Mutex
	by map[measure.Function][]time.Duration
}

func (d *durations) Observe(o measure.Observation) {
	if o.Class != measure.OK {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by == nil {
		d.by = map[measure.Function][]time.Duration{}
	}
	d.by[o.Function] = append(d.by[o.Function], o.Duration)
}

func (d *durations) p50(f measure.Function) (time.Duration, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := slices.Clone(d.by[f])
	if len(s) == 0 {
		return 0, 0
	}
	slices.Sort(s)
	return s[len(s)/2], len(s)
}

// A target that adds a known latency D to chosen commands: the latency
// mailbench's own clients measure for those commands is D (±2 ms). The
// loopback round trip and the in-memory server's work are not zero (a few
// ms on a loaded two-core machine), so each command is timed against a twin
// target without the knob, interleaved, and the difference of the medians
// is checked; the knobbed median itself must be at least D, and the
// commands without a knob must not be slowed.
func TestLatencyKnobIsWhatMailbenchMeasures(t *testing.T) {
	const d = 30 * time.Millisecond
	const tolerance = 2 * time.Millisecond
	const n = 31
	knobbed := startTarget(t, Options{Latency: map[string]time.Duration{"SELECT": d, "uid fetch": d, "DATA": d}})
	plain := startTarget(t, Options{})
	ctx := context.Background()

	measureOn := func(tg *Target) (func(), *durations) {
		obs := &durations{}
		c, err := imapclient.Connect(ctx, imapclient.Config{Address: tg.IMAPAddr(), Timeout: testTimeout, Observer: obs}, "user1", "secret-one")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		sc, err := smtpclient.Connect(ctx, smtpclient.Config{Address: tg.SMTPAddr(), Timeout: testTimeout, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sc.Close() })
		msg := bytes.NewReader([]byte("Subject: latency\r\n\r\nbody\r\n"))
		return func() {
			if _, err := c.SelectInbox(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.UIDFetchRange(ctx, 1, 10); err != nil {
				t.Fatal(err)
			}
			if _, err := c.List(ctx); err != nil {
				t.Fatal(err)
			}
			msg.Seek(0, 0)
			if _, err := sc.Send(ctx, "a@example.test", []string{address(testUsers[0])}, msg); err != nil {
				t.Fatal(err)
			}
		}, obs
	}
	opD, withD := measureOn(knobbed)
	op0, without := measureOn(plain)
	for range n {
		opD()
		op0()
	}

	for _, f := range []measure.Function{measure.IMAPSelectInbox, measure.IMAPUIDFetch, measure.SMTPData} {
		p50, got := withD.p50(f)
		base, _ := without.p50(f)
		if got != n {
			t.Fatalf("%s: %d successful operations, want %d", f, got, n)
		}
		t.Logf("%s: p50 %v with the knob, %v without: %v added (D = %v)", f, p50, base, p50-base, d)
		if added := p50 - base; p50 < d || added < d-tolerance || added > d+tolerance {
			t.Errorf("%s: p50 %v, %v more than without the knob; want D = %v ± %v", f, p50, added, d, tolerance)
		}
	}
	p50, _ := withD.p50(measure.IMAPList)
	base, _ := without.p50(measure.IMAPList)
	if p50-base >= tolerance {
		t.Errorf("IMAP LIST, without a knob: p50 %v, %v on the plain target; want no added latency", p50, base)
	}
}

func TestLatencyKnobRejectsUnknownCommands(t *testing.T) {
	for _, lat := range []map[string]time.Duration{{"NOOP": time.Millisecond}, {"SELECT": -time.Millisecond}, {"DATA": 2 * time.Hour}} {
		_, err := Start(context.Background(), Options{Users: testUsers, Latency: lat})
		if err == nil || !strings.Contains(err.Error(), "latency") {
			t.Errorf("Start with latency %v: %v, want a latency error", lat, err)
		}
	}
}
