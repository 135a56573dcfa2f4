package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
	"github.com/mailbench/mailbench/workload"
)

// shortQuick is the shipped quick workload shortened for tests.
func shortQuick(t *testing.T, measurement time.Duration) *workload.Config {
	return testconfig.Quick(t, measurement)
}

func TestRunEmbeddedEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 6*time.Second)
		ctx := context.Background()
		run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range measure.SPECFunctions {
			fs := run.Functions[f]
			if fs == nil || fs.Operations == 0 {
				t.Errorf("%s: no operations in the measurement window", f)
			}
		}
		if run.Sink.Messages == 0 || run.Sink.Recipients == 0 {
			t.Errorf("sink received %d messages, %d recipients: want the remote share", run.Sink.Messages, run.Sink.Recipients)
		}
		d := run.Delivery
		if d == nil {
			t.Fatal("no delivery reconciliation")
		}
		if d.RemoteDeliveries == 0 || d.RelayedRemote != d.RemoteDeliveries || run.Sink.Recipients != d.RemoteDeliveries {
			t.Errorf("remote share: %d remote deliveries accepted, %d arrived (sink counted %d recipients)",
				d.RemoteDeliveries, d.RelayedRemote, run.Sink.Recipients)
		}
		if d.LocalDeliveries == 0 || d.Lost != 0 || d.Duplicated != 0 || d.Corrupted != 0 {
			t.Errorf("delivery: %+v", *d)
		}
		if run.SessionsStarted < 30 {
			t.Errorf("%d sessions started in a 6 s window at 10/s", run.SessionsStarted)
		}
		if run.AchievedSessionsPerHour <= 0 || run.Partial {
			t.Errorf("achieved %.0f/h, partial %v", run.AchievedSessionsPerHour, run.Partial)
		}
		if !run.Table.Compliant {
			var buf bytes.Buffer
			render.WriteText(&buf, run)
			t.Errorf("embedded target not compliant:\n%s", buf.String())
		}
		var buf bytes.Buffer
		if err := render.WriteText(&buf, run); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "Verdict: COMPLIANT") {
			t.Errorf("report lacks the verdict:\n%s", buf.String())
		}
	})
}

// A server that stops answering mid-run must cost timeouts, not a hung run:
// the run ends on time and the operations in flight are timeout errors.
func TestRunServerStopsAnswering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 6*time.Second)
		cfg.Load.OpTimeout.Duration = 500 * time.Millisecond
		// The settle looks for the unseen mail until its delivery limit has
		// passed: a short limit keeps the test short.
		cfg.Compliance.DeliveryLimit.Duration = 2 * time.Second
		ctx := context.Background()
		opts := Options{Network: memnet.New(), EmbeddedStarted: func(tg *demo.Target) {
			// Stall IMAP from 3 s into the run (2 s into measurement) to the end.
			time.AfterFunc(3*time.Second, func() { tg.StallIMAP(true) })
		}}
		start := time.Now()
		run, err := Run(ctx, ctx, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		phases := cfg.Phases.Warmup.Duration + cfg.Phases.Measurement.Duration + cfg.Phases.Rampdown.Duration +
			cfg.Compliance.DeliveryLimit.Duration + cfg.Phases.Settle.Duration
		if took > phases+3*time.Second {
			t.Errorf("run took %v, phases add up to %v: a silent server delayed the end", took, phases)
		}
		fs := run.Functions[measure.IMAPConnect]
		if fs == nil || fs.Errors[measure.Timeout] == 0 {
			t.Fatalf("IMAP Connect timeouts: %+v", fs)
		}
		for f, s := range run.Functions {
			for c, n := range s.Errors {
				if n > 0 && c != measure.Timeout && c != measure.Connection {
					t.Errorf("%s: %d %s errors; a stalled server should give timeouts", f, n, c)
				}
			}
		}
		if run.Table.Compliant {
			t.Error("a run against a server that stopped answering was compliant")
		}
	})
}

// The first stop drains and marks the report partial.
func TestRunStopIsPartial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 30*time.Second)
		stop, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		start := time.Now()
		run, err := Run(stop, context.Background(), cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("stopped run took %v", time.Since(start))
		}
		if !run.Partial {
			t.Error("stopped run not marked partial")
		}
		if run.SessionsStarted == 0 || run.AchievedSessionsPerHour == 0 {
			t.Errorf("stopped run measured nothing: %d sessions, %.0f/h", run.SessionsStarted, run.AchievedSessionsPerHour)
		}
	})
}

// Submission with SMTP AUTH: each send session logs in as its own user
// (over STARTTLS, where the embedded target offers AUTH), and the inbound
// stream delivers without logging in.
// On the real clock and real sockets: the connect breakdown counts an
// authentication by its duration, which a synctest bubble makes zero.
func TestRunSubmissionAuth(t *testing.T) {
	cfg := shortQuick(t, 3*time.Second)
	cfg.Target.SMTP.TLS = "starttls"
	cfg.Target.SMTP.Auth = "plain"
	ctx := context.Background()
	run, err := Run(ctx, ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []measure.Function{measure.SMTPConnect, measure.SMTPData} {
		fs := run.Functions[f]
		if fs == nil || fs.Operations == 0 || fs.ErrorCount() != 0 {
			t.Errorf("%s: %+v", f, fs)
		}
	}
	if c := run.Connect; c == nil {
		t.Error("no connect breakdown")
	} else if fb, ok := c.Function(measure.SMTPConnect); !ok || fb.Auth.Count == 0 {
		t.Errorf("SMTP Connect: no authentication measured: %+v", fb)
	}
	if !run.Table.Compliant {
		var buf bytes.Buffer
		render.WriteText(&buf, run)
		t.Errorf("not compliant:\n%s", buf.String())
	}
}

// A wrong server name is a classified TLS error in the table, with its
// reason in the report, never a crash.
func TestRunTLSWrongServerName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 2*time.Second)
		cfg.Target.IMAP.TLS = "starttls"
		cfg.Target.IMAP.ServerName = "wrong.mailbench.test"
		cfg.Compliance.DeliveryLimit.Duration = 2 * time.Second // nothing can be seen: the settle lasts the limit
		ctx := context.Background()
		run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		fs := run.Functions[measure.IMAPConnect]
		if fs == nil || fs.Errors[measure.TLS] == 0 || fs.Errors[measure.TLS] != fs.Operations {
			t.Fatalf("IMAP Connect: want every operation a TLS error, got %+v", fs)
		}
		if run.Table.Compliant {
			t.Error("a run whose every IMAP connect failed was compliant")
		}
		var buf bytes.Buffer
		if err := render.WriteText(&buf, run); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "IMAP Connect [tls]: wrong server name") {
			t.Errorf("report does not name the TLS failure:\n%s", buf.String())
		}
	})
}

// The same seed gives the same sessions: arrivals, session types, and so
// the same mail sent. A different seed gives a different run.
func TestRunReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("three runs")
	}
	synctest.Test(t, func(t *testing.T) {
		runWith := func(seed int64) *report.Run {
			cfg := shortQuick(t, 3*time.Second)
			cfg.Seed = seed
			ctx := context.Background()
			run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
			if err != nil {
				t.Fatal(err)
			}
			return run
		}
		type summary struct {
			started  int64
			byType   string
			accepted int64
			local    int64
		}
		sum := func(r *report.Run) summary {
			return summary{r.SessionsStarted, fmt.Sprint(r.SessionsByType), r.Delivery.Accepted, r.Delivery.LocalDeliveries}
		}
		a, b, c := sum(runWith(7)), sum(runWith(7)), sum(runWith(8))
		if a != b {
			t.Errorf("same seed, different runs:\n%+v\n%+v", a, b)
		}
		if a == c {
			t.Errorf("seeds 7 and 8 gave the same run: %+v", a)
		}
	})
}

// A server whose standard mailboxes have other names: send sessions APPEND
// to the configured Sent, folders sessions select among the configured names.
func TestRunCustomMailboxNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 3*time.Second)
		cfg.Mailboxes.Sent, cfg.Mailboxes.Trash = "Sent Items", "Deleted Items"
		ctx := context.Background()
		run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []measure.Function{measure.IMAPAppend, measure.IMAPSelectFolder} {
			if fs := run.Functions[f]; fs == nil || fs.Operations == 0 || fs.ErrorCount() != 0 {
				t.Errorf("%s: %+v", f, fs)
			}
		}
		if !run.Table.Compliant {
			var buf bytes.Buffer
			render.WriteText(&buf, run)
			t.Errorf("not compliant:\n%s", buf.String())
		}
	})
}
