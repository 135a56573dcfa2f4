package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/measure"
)

// Mail the workload deletes itself is never called missing: three users
// with one INBOX message each, only cleanup and send sessions (nobody
// else reads an INBOX) and no watched INBOX, so cleanups expunge run mail
// that nothing saw. Each such delivery is accounted as deleted by the
// workload, never lost.
func TestRunCleanupDeletionsAreNotLost(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6 s run")
	}
	cfg := shortQuick(t, 3*time.Second)
	cfg.Users.Count = 3
	cfg.Mailboxes.InboxMessages = 1
	cfg.Sessions.Check.Weight, cfg.Sessions.Read.Weight, cfg.Sessions.Folders.Weight = 0, 0, 0
	cfg.Sessions.Cleanup.Weight, cfg.Sessions.Send.Weight = 60, 40
	cfg.Messages.RemoteShare = 0
	cfg.Load.InboundPerSession = 1
	cfg.Delivery.WatchUsers = 0
	ctx := context.Background()
	run, err := Run(ctx, ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := run.Delivery
	if d == nil {
		t.Fatal("no delivery accounting")
	}
	t.Logf("delivery: %+v", *d)
	if d.DeletedByWorkload == 0 {
		t.Errorf("no delivery deleted by the workload: the test did not provoke the case (%+v)", *d)
	}
	if d.Lost != 0 {
		t.Errorf("%d deliveries lost; the workload's deletions must not count as lost", d.Lost)
	}
	if d.DeliveredLocal+d.DeletedByWorkload != d.LocalDeliveries {
		t.Errorf("seen %d + deleted %d != local deliveries %d", d.DeliveredLocal, d.DeletedByWorkload, d.LocalDeliveries)
	}
}

// Local Delivery Time is timed to the millisecond: the embedded target
// delivers local mail 300 ms after its 250; with every user watched (IDLE),
// the Delivery Time (local) row reads 300 ms and a little, the report
// states the timing and the server clock.
func TestRunWatchedDeliveryTime(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6 s run")
	}
	const delay = 300 * time.Millisecond
	cfg := shortQuick(t, 3*time.Second)
	cfg.Delivery.WatchUsers = cfg.Users.Count
	ctx := context.Background()
	run, err := Run(ctx, ctx, cfg, Options{EmbeddedStarted: func(tg *demo.Target) { tg.SetDeliveryDelay(delay) }})
	if err != nil {
		t.Fatal(err)
	}
	d := run.Delivery
	t.Logf("delivery %+v; timing %q; clock %+v", *d, run.DeliveryTiming, run.ServerClock)
	if d.Lost != 0 || d.TimedByAnnouncement == 0 || d.TimedByAnnouncement+d.TimedByInternalDate+d.TimedByObservation != d.DeliveredLocal {
		t.Errorf("delivery %+v: want nothing lost, every seen delivery timed, most by announcement", *d)
	}
	fs := run.Functions[measure.DeliveryLocal]
	if fs == nil || fs.Operations == 0 {
		t.Fatal("no Delivery Time (local)")
	}
	if p50 := fs.Histogram.ValueAtQuantile(50); p50 < 300_000 || p50 > 600_000 {
		t.Errorf("Delivery Time (local) p50 %d µs, want about 300 ms", p50)
	}
	if !strings.Contains(run.DeliveryTiming, "IDLE") || run.ServerClock == nil {
		t.Errorf("report states timing %q, clock %v", run.DeliveryTiming, run.ServerClock)
	}
}
