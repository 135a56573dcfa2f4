package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report/render"
	"github.com/mailbench/mailbench/workload"
)

// TestDovecotPopulation: against the project's Dovecot + Postfix, a mix of
// spec users, desktop clients and mobile clients whose days are pressed
// into an hour. Dovecot offers QRESYNC and CONDSTORE, IDLE and MOVE: every
// Client row is measured and passes, the mobile clients reconnect and
// resync by QRESYNC, the desktop clients hold both their connections, and
// no message, received or sent, is lost.
func TestDovecotPopulation(t *testing.T) {
	needSUT(t)
	cfg := sutConfig(t)
	cfg.Users.Count = 60
	cfg.Mailboxes.InboxMessages, cfg.Mailboxes.FolderMessagesMin, cfg.Mailboxes.FolderMessagesMax = 3, 1, 1
	shorten(cfg, 8*time.Second, 30*time.Second, 5*time.Second, 0)
	cfg.Load.SessionsPerUserHour = 360 // the spec users: a session every 10 s each
	cfg.Delivery.WatchUsers = 0
	hour := workload.Duration{Duration: time.Hour}
	delay := workload.Duration{Duration: 2 * time.Second}
	received, sent := 600.0, 200.0
	cfg.Population = workload.PopulationConfig{Mix: []workload.MixEntry{
		{Users: "spec", Client: "spec", Share: 1}, {Users: "busy", Client: "desktop", Share: 2}, {Users: "busy", Client: "phone", Share: 1}}}
	cfg.Profiles = workload.ProfilesConfig{
		Users: map[string]workload.UserProfileConfig{"busy": {Base: "heavy", Day: &hour, ActionDelay: &delay, ReceivedPerDay: &received, SentPerDay: &sent}},
		Clients: map[string]workload.ClientProfileConfig{
			"desktop": {Poll: &workload.Duration{Duration: 5 * time.Second}},
			"phone":   {Base: "mobile", Online: &workload.Duration{Duration: 8 * time.Second}, Offline: &workload.Duration{Duration: 2 * time.Second}},
		},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := populate.Init(ctx, cfg, populate.Options{Workers: 8}); err != nil {
		t.Fatalf("init of %d users: %v", cfg.Users.Count, err)
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
	for _, f := range append([]measure.Function{measure.IMAPConnect, measure.DeliveryLocal}, measure.ClientFunctions...) {
		if row, ok := run.Table.Row(f); !ok || row.Operations == 0 || !row.Pass {
			t.Errorf("%s: row %+v (present %v): want it measured and passing", f, row, ok)
		}
	}
	p := run.Population
	if p == nil || len(p.Groups) != 3 {
		t.Fatalf("population %+v", p)
	}
	desk, phone := p.Groups[1], p.Groups[2]
	if desk.Held != int64(2*desk.Users) || desk.Opened == 0 || desk.Removed == 0 {
		t.Errorf("busy/desktop %+v: want both connections of every user held, mail opened and removed", desk)
	}
	if phone.Connects <= int64(phone.Users) || phone.Resyncs < phone.Connects-int64(phone.Users) {
		t.Errorf("busy/phone %+v: want reconnects, each resynced", phone)
	}
	if d := run.Delivery; d == nil || d.Lost != 0 || d.Duplicated != 0 || d.Corrupted != 0 {
		t.Errorf("delivery %+v: want none lost, duplicated or corrupted", d)
	}
	if !strings.Contains(tb.String(), "Population ([population]") {
		t.Error("the text report has no population section")
	}
}
