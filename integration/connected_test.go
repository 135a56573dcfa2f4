package integration

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report/render"
)

// connectedUsers is how many users of the project's Dovecot stay connected
// in TestDovecotConnectedClients (scripts/sut/up -n makes at least as many).
const connectedUsers = 250

// TestDovecotConnectedClients: against the project's Dovecot + Postfix,
// 250 users stay connected in IDLE beside the short sessions of the
// shipped workload: all are held at the end of the window, none is
// dropped, and their deliveries are timed by the EXISTS Dovecot sent them.
func TestDovecotConnectedClients(t *testing.T) {
	needSUT(t)
	cfg := sutConfig(t)
	cfg.Users.Count = connectedUsers
	cfg.Mailboxes.InboxMessages, cfg.Mailboxes.FolderMessagesMin, cfg.Mailboxes.FolderMessagesMax = 2, 1, 1
	// The ramp asks Dovecot for 12.5 logins a second, and the warm-up
	// outlasts it: this Dovecot logged in 30-45 users a second with four
	// busy loops beside it (dovecot.log's Login lines), and CI's machine
	// runs other packages' tests beside this one. A 5 s ramp (50 a second)
	// left 8 of 250 LOGINs past the 5 s operation timeout there: the
	// server's answer to that load, not what this test is about.
	shorten(cfg, 22*time.Second, 20*time.Second, 5*time.Second, 7200)
	cfg.Clients.Connected = connectedUsers
	cfg.Clients.Ramp.Duration = 20 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := populate.Init(ctx, cfg, populate.Options{Workers: 8}); err != nil {
		t.Fatalf("init of %d users (scripts/sut/up -n %d or more): %v", connectedUsers, connectedUsers, err)
	}
	var lb, tb bytes.Buffer
	run, err := orchestrator.Run(ctx, context.Background(), cfg, orchestrator.Options{Log: &lb})
	if err != nil {
		t.Fatalf("orchestrator.Run: %v\n%s", err, lb.String())
	}
	if err := render.WriteText(&tb, run); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", tb.String())
	c := run.Clients
	if c == nil || c.Held != connectedUsers || c.Connects != connectedUsers || c.Reconnects != 0 || len(c.Drops) != 0 {
		t.Fatalf("connected clients %+v: want all %d held, connected once, none dropped", c, connectedUsers)
	}
	for _, f := range []measure.Function{measure.IMAPIdle, measure.NewMailNotification} {
		if row, ok := run.Table.Row(f); !ok || row.Operations == 0 || !row.Pass {
			t.Errorf("%s: row %+v (present %v): want it measured and passing", f, row, ok)
		}
	}
	if c.Announced == 0 || run.Delivery == nil || run.Delivery.TimedByAnnouncement == 0 {
		t.Errorf("no delivery announced to a connected client (announced %d, delivery %+v)", c.Announced, run.Delivery)
	}
	if d := run.Delivery; d.Lost != 0 || d.Duplicated != 0 || d.Corrupted != 0 {
		t.Errorf("lost %d, duplicated %d, corrupted %d", d.Lost, d.Duplicated, d.Corrupted)
	}
}
