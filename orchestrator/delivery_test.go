package orchestrator

import (
	"context"
	"testing"
	"time"
)

// Issue 9, "false lost from the workload's own deletions": three users
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
