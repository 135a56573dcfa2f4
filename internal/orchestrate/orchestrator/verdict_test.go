package orchestrator

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report/render"
	"github.com/mailbench/mailbench/workload"
)

// A target where nothing listens is no server to measure: the run is
// abandoned within seconds as "could not run", with the reason, and
// achieves nothing (sessions/hour count sessions that logged in).
func TestRunCouldNotRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := shortQuick(t, 30*time.Second)
	cfg.Target.Embedded = false
	cfg.Target.IMAP.Address, cfg.Target.SMTP.Address = addr, addr
	cfg.Target.SMTP.Auth = "none"
	ctx := context.Background()
	start := time.Now()
	run, err := Run(ctx, ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("abandoned run took %v", took)
	}
	if !strings.Contains(run.CouldNotRun, "refused or timed out all of the first 5 connections") ||
		!strings.Contains(run.CouldNotRun, "connection") {
		t.Errorf("could not run: %q", run.CouldNotRun)
	}
	if run.AchievedSessionsPerHour != 0 || run.SessionsLoggedIn != 0 {
		t.Errorf("achieved %.0f/h, %d logged in, against nothing", run.AchievedSessionsPerHour, run.SessionsLoggedIn)
	}
	if !strings.HasPrefix(run.NotAResult(), "could not run: ") || !strings.HasPrefix(run.VerdictLine(), "Verdict: NONE, COULD NOT RUN (") {
		t.Errorf("not a result: %q; verdict %q", run.NotAResult(), run.VerdictLine())
	}
	for f, s := range run.Functions {
		if n := s.Errors[measure.Other]; n > 0 {
			t.Errorf("%s: %d errors of class other (cut operations must be cancelled)", f, n)
		}
	}
}

// A generator that cannot keep to its schedule is charged to itself: with
// a late tolerance no scheduler can keep (1 ns), the run is GENERATOR-BOUND
// and its verdict is no result for the server. With send weight 0 the
// functions only send sessions run are not measured: the run is not a full
// SPEC-style run, and those rows do not fail.
func TestRunGeneratorBoundAndNotMeasured(t *testing.T) {
	cfg := shortQuick(t, 3*time.Second)
	cfg.Load.LateTolerance.Duration = time.Nanosecond
	cfg.Sessions.Send.Weight = 0
	ctx := context.Background()
	run, err := Run(ctx, ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := run.Generator
	if g == nil || g.SessionLateness == nil {
		t.Fatal("no generator health")
	}
	if g.SessionLateness.TotalCount() != run.SessionsScheduled || run.SessionsScheduled == 0 {
		t.Errorf("lateness of %d session starts, %d scheduled", g.SessionLateness.TotalCount(), run.SessionsScheduled)
	}
	if g.InboundLateness.TotalCount() != run.Inbound.Scheduled || run.Inbound.Scheduled == 0 || run.Inbound.Started == 0 {
		t.Errorf("inbound: lateness of %d, %+v", g.InboundLateness.TotalCount(), run.Inbound)
	}
	if !g.CPUKnown || g.CPU <= 0 || g.Cores <= 0 || g.CPUWindow < 2*time.Second {
		t.Errorf("generator CPU %v over %v on %d cores", g.CPU, g.CPUWindow, g.Cores)
	}
	why := run.GeneratorBound()
	if len(why) == 0 || !strings.Contains(why[0], "sessions started late") {
		t.Errorf("generator-bound reasons %q", why)
	}
	if v := run.VerdictLine(); !strings.HasPrefix(v, "Verdict: NONE, GENERATOR-BOUND (") {
		t.Errorf("verdict %q", v)
	}
	if run.SessionsLoggedIn == 0 || run.SessionsLoggedIn > run.SessionsStarted || run.SessionsCompleted > run.SessionsLoggedIn {
		t.Errorf("started %d, logged in %d, completed %d", run.SessionsStarted, run.SessionsLoggedIn, run.SessionsCompleted)
	}
	if !slices.Contains(run.Table.NotMeasured, string(measure.IMAPAppend)) || slices.Contains(run.Table.Failing, string(measure.IMAPAppend)) {
		t.Errorf("not measured %v, failing %v: IMAP APPEND cannot run with send weight 0", run.Table.NotMeasured, run.Table.Failing)
	}
	var text bytes.Buffer
	if err := render.WriteText(&text, run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"*** GENERATOR-BOUND", "NOT MEASURED", "Session start lateness", "Inbound mail:", "logged in"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
	run.Generator.LateTolerance = time.Second // the figures of a generator that kept up
	if len(run.GeneratorBound()) == 0 {
		if v := run.VerdictLine(); !strings.Contains(v, "not a full SPEC-style run (not measured: IMAP APPEND") {
			t.Errorf("verdict %q", v)
		}
	}
}

func TestRelayDiagnosis(t *testing.T) {
	cfg := workload.DefaultConfig()
	cfg.Users.RemoteDomain = "remote.test"
	for _, c := range []struct {
		name     string
		rec      delivery.Reconciliation
		pending  *delivery.Pending
		sink     string
		wantHint bool
	}{
		{"nothing relayed", delivery.Reconciliation{RemoteDeliveries: 5}, nil, "127.0.0.1:2526", true},
		{"a third relayed", delivery.Reconciliation{RemoteDeliveries: 9, RelayedRemote: 3}, nil, "127.0.0.1:2526", true},
		{"most relayed", delivery.Reconciliation{RemoteDeliveries: 9, RelayedRemote: 8}, nil, "127.0.0.1:2526", false},
		{"no remote mail", delivery.Reconciliation{}, nil, "127.0.0.1:2526", false},
		{"no sink", delivery.Reconciliation{RemoteDeliveries: 5}, nil, "", false},
		{"external sink", delivery.Reconciliation{RemoteDeliveries: 5}, &delivery.Pending{Deliveries: make([]delivery.PendingDelivery, 5)}, "127.0.0.1:2526", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := relayDiagnosis(cfg, c.rec, c.pending, c.sink)
			if (h != "") != c.wantHint {
				t.Fatalf("hint %q, want one: %v", h, c.wantHint)
			}
			if h != "" && (!strings.Contains(h, `users.remote_domain ("remote.test")`) || !strings.Contains(h, "sink.listen (127.0.0.1:2526)")) {
				t.Errorf("hint does not name the keys: %q", h)
			}
		})
	}
}

// TestFolderFit: folders outside a Courier-style namespace ("INBOX.", ".")
// are named with what they should be; a wrong delimiter is named; folders
// that fit pass.
func TestFolderFit(t *testing.T) {
	cfg := workload.DefaultConfig()
	cfg.Mailboxes.Folders = []string{"Archive", "Projects/Alpha"}
	if ok, d := folderFit(cfg, "", "/"); !ok {
		t.Errorf("Dovecot's default namespace: %s", d)
	}
	if ok, d := folderFit(cfg, "INBOX.", "."); ok || !strings.Contains(d, "mailboxes.delimiter") {
		t.Errorf("a '/' delimiter against '.': %v %s", ok, d)
	}
	cfg.Mailboxes.Delimiter = "."
	cfg.Mailboxes.Folders = []string{"Archive", "Projects.Alpha"}
	ok, d := folderFit(cfg, "INBOX.", ".")
	if ok || !strings.Contains(d, "INBOX.Archive") || !strings.Contains(d, "INBOX.Projects.Alpha") || !strings.Contains(d, "INBOX.Sent") {
		t.Errorf("folders outside INBOX.: %v %s", ok, d)
	}
	cfg.Mailboxes.Folders = []string{"INBOX.Archive"}
	cfg.Mailboxes.Sent, cfg.Mailboxes.Drafts, cfg.Mailboxes.Trash = "INBOX.Sent", "INBOX.Drafts", "INBOX.Trash"
	if ok, d := folderFit(cfg, "INBOX.", "."); !ok {
		t.Errorf("folders inside INBOX.: %s", d)
	}
}
