package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// passingConnects is one rule, IMAP Connect within 5 s, and 100 connects
// of 1 ms that pass it.
func passingConnects() (compliance.Rules, *metrics.Stats) {
	rules := compliance.Rules{MaxErrorPercent: 1, Functions: []compliance.Rule{
		{Function: measure.IMAPConnect, Limit: 5 * time.Second, RequiredPercent: 95},
	}}
	stats := metrics.NewStats(rules.Limits())
	for range 100 {
		stats.Observe(measure.Observation{Function: measure.IMAPConnect, Start: time.Now(), Duration: time.Millisecond})
	}
	return rules, stats
}

// A run that could not offer its target load (sessions dropped) fails,
// however fast the server answered what it was offered.
func TestEvaluateDroppedSessions(t *testing.T) {
	rules, stats := passingConnects()
	for _, tc := range []struct {
		started, dropped int64
		max              float64
		want             bool // compliant
	}{
		{1000, 0, 1, true},
		{991, 9, 1, true},   // 0.9% < 1%
		{990, 10, 1, false}, // exactly 1% fails "< 1%"
		{500, 500, 1, false},
		{500, 500, 0, true}, // 0 disables the check
		{0, 0, 1, true},     // nothing due: nothing dropped
	} {
		r := &Run{SessionCounts: SessionCounts{SessionsStarted: tc.started, SessionsDropped: tc.dropped, MaxDroppedPercent: tc.max}, Functions: stats.Snapshot()}
		r.Evaluate(rules)
		if r.Table.Compliant != tc.want {
			t.Errorf("started %d dropped %d max %v%%: compliant %v, want %v (failing %v)",
				tc.started, tc.dropped, tc.max, r.Table.Compliant, tc.want, r.Table.Failing)
		}
		if !tc.want && !slices.Contains(r.Table.Failing, DroppedRow) {
			t.Errorf("failing %v does not name %q", r.Table.Failing, DroppedRow)
		}
	}
}

// Mail that a stream could not send is load the server was not offered:
// the inbound mail's and the population's sent mail's drops fail a run as
// the sessions' do, each under its own row.
func TestEvaluateDroppedMail(t *testing.T) {
	rules, stats := passingConnects()
	for _, tc := range []struct {
		name          string
		inbound       InboundSummary
		sends         *InboundSummary
		max           float64
		wantFailing   []string
		wantDropLines int
	}{
		{"none dropped", InboundSummary{Scheduled: 1000, Started: 1000}, nil, 1, nil, 0},
		{"inbound below", InboundSummary{Scheduled: 1000, Started: 991, Dropped: 9, DroppedAtCap: 9}, nil, 1, nil, 1},
		{"inbound at the limit", InboundSummary{Scheduled: 1000, Started: 990, Dropped: 10, DroppedAtCap: 10}, nil, 1, []string{DroppedInboundRow}, 1},
		{"inbound, check off", InboundSummary{Scheduled: 1000, Started: 500, Dropped: 500, DroppedAtCap: 500}, nil, 0, nil, 1},
		{"sends", InboundSummary{Scheduled: 10, Started: 10}, &InboundSummary{Scheduled: 100, Started: 50, Dropped: 50, DroppedAtCap: 50}, 1, []string{DroppedSendsRow}, 1},
		{"both", InboundSummary{Scheduled: 100, Started: 0, Dropped: 100, DroppedAtCap: 100}, &InboundSummary{Scheduled: 100, Started: 98, Dropped: 2, DroppedAtCap: 2}, 1,
			[]string{DroppedInboundRow, DroppedSendsRow}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{SessionCounts: SessionCounts{SessionsStarted: 100, MaxDroppedPercent: tc.max}, Inbound: tc.inbound, Sends: tc.sends, Functions: stats.Snapshot()}
			r.Evaluate(rules)
			if got := r.Table.Failing; !slices.Equal(got, tc.wantFailing) {
				t.Errorf("failing %q, want %q", got, tc.wantFailing)
			}
			if r.Table.Compliant != (len(tc.wantFailing) == 0) {
				t.Errorf("compliant %v with failing %q", r.Table.Compliant, r.Table.Failing)
			}
			lines := 0
			for _, st := range r.MailStreams() {
				if r.StreamDropLine(st) != "" {
					lines++
				}
			}
			if lines != tc.wantDropLines {
				t.Errorf("%d drop lines, want %d", lines, tc.wantDropLines)
			}
		})
	}
}

// A stream's drops are attributed: at mailbench's cap, and to the server
// when it slowed the sessions down too.
func TestStreamDropLine(t *testing.T) {
	st := MailStream{InboundSummary{Scheduled: 100, Started: 60, Dropped: 40, DroppedAtCap: 38, MaxConcurrent: 1250}, DroppedInboundRow, "inbound messages"}
	r := &Run{SessionCounts: SessionCounts{PlannedSessionDuration: Duration(time.Second), MeanSessionDuration: Duration(time.Second)}}
	want := "40 inbound messages dropped: 38 at the generator's cap of 1,250 concurrent deliveries (a quarter of load.max_concurrent_sessions); " +
		"2 of another cause; mailbench's cap, not the server (raise load.max_concurrent_sessions)"
	if got := r.StreamDropLine(st); got != want {
		t.Errorf("sessions as planned:\n got %q\nwant %q", got, want)
	}
	r.MeanSessionDuration = Duration(10 * time.Second)
	if got := r.StreamDropLine(st); !strings.HasSuffix(got, "; the server's: sessions lasted 10.0 s on average against 1.0 s planned") {
		t.Errorf("sessions slowed: %q", got)
	}
	st.Dropped, st.DroppedAtCap = 0, 0
	if got := r.StreamDropLine(st); got != "" {
		t.Errorf("nothing dropped: %q", got)
	}
}
