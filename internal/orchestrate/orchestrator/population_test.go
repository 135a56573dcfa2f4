package orchestrator

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// TestRunWithPopulation: a population of spec users and busy desktop and
// mobile users on the embedded target. Every Client row, the delivery
// times and the spec users' logins have operations and pass; every message, received and sent, is
// accounted for (none lost); the report counts each group, its clients
// held at the end of the window as planned; the profiles' users' mail has
// their profiles' size (64 KiB; the spec users send none here, so the
// sink's mail is all theirs), not messages.sizes'.
func TestRunWithPopulation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 20*time.Second)
		cfg.Load.SessionsPerHour = 0
		cfg.Load.SessionsPerUserHour = 3600 // the spec users: a session a second each
		cfg.Users.Count = 40
		cfg.Phases.Warmup.Duration = 5 * time.Second
		cfg.Delivery.WatchUsers = 0
		hour := workload.Duration{Duration: time.Hour}
		delay := workload.Duration{Duration: time.Second}
		many, some := 1200.0, 300.0
		cfg.Population = workload.PopulationConfig{Mix: []workload.MixEntry{
			{Users: "spec", Client: "spec", Share: 1}, {Users: "busy", Client: "desktop", Share: 2}, {Users: "light", Client: "phone", Share: 1}}}
		cfg.Profiles = workload.ProfilesConfig{
			Users: map[string]workload.UserProfileConfig{
				"busy":  {Base: "heavy", Day: &hour, ActionDelay: &delay, ReceivedPerDay: &many, SentPerDay: &some, Sizes: []workload.SizeShare{{Size: 64 << 10, Share: 100}}},
				"light": {Day: &hour, ActionDelay: &delay, ReceivedPerDay: &some, SentPerDay: &some, Sizes: []workload.SizeShare{{Size: 64 << 10, Share: 100}}},
			},
			Clients: map[string]workload.ClientProfileConfig{
				"desktop": {Poll: &workload.Duration{Duration: 3 * time.Second}},
				"phone":   {Base: "mobile", Online: &workload.Duration{Duration: 8 * time.Second}, Offline: &workload.Duration{Duration: 2 * time.Second}},
			},
		}
		cfg.Sessions.Send.Weight = 0 // the sink's mail is the profiles' alone
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append([]measure.Function{measure.IMAPConnect, measure.IMAPSelectInbox, measure.DeliveryLocal, measure.DeliveryRemote}, measure.ClientFunctions...) {
			row, ok := run.Table.Row(f)
			if !ok || row.Operations == 0 || !row.Pass {
				t.Errorf("%s: row %+v (present %v): want it measured and passing", f, row, ok)
			}
		}
		if d := run.Delivery; d == nil || d.Lost != 0 || d.Sent == 0 {
			t.Errorf("delivery %+v: want mail sent and none lost", d)
		}
		if run.Sink.Messages == 0 || run.Sink.Bytes < run.Sink.Messages*64<<10 || run.Sink.Bytes > run.Sink.Messages*(64<<10+4096) {
			t.Errorf("the sink got %d messages of %d bytes in all: want each of the profiles' 64 KiB", run.Sink.Messages, run.Sink.Bytes)
		}
		// The profiles' sent mail is a stream of its own, reported and
		// counted like the inbound mail: 30 users × 300 a day of an hour.
		if se := run.Sends; se == nil || se.TargetPerHour != 9000 || se.Scheduled == 0 || se.Started+se.Dropped != se.Scheduled || se.MaxConcurrent != cfg.StreamMaxConcurrent() {
			t.Errorf("sent mail %+v: want 9,000/hour scheduled and counted, with its cap", se)
		}
		if h := run.Headline(); !strings.Contains(h, ": 40 users of the mix (10 spec/spec, 20 busy/desktop, 10 light/phone); ") {
			t.Errorf("headline %q: want the population's users", h)
		}
		p := run.Population
		if p == nil || len(p.Groups) != 3 {
			t.Fatalf("population %+v", p)
		}
		desk, phone := p.Groups[1], p.Groups[2]
		if desk.Name != "busy/desktop" || desk.Users != 20 || desk.Held != 40 || desk.Connects != 40 || desk.NewMail == 0 || desk.Opened == 0 || desk.Removed == 0 {
			t.Errorf("busy/desktop %+v: want 20 users, their 40 connections held, mail fetched, opened and removed", desk)
		}
		if w := desk.Window; w == nil || w.Seconds != 20 || w.NewMail == 0 || w.NewMail > desk.NewMail || w.Connects != 0 {
			t.Errorf("busy/desktop's window %+v: want 20 s of new mail, no login (they connected in the warm-up)", w)
		}
		if phone.Connects <= int64(phone.Users) || phone.Resyncs < phone.Connects {
			t.Errorf("light/phone %+v: want reconnects (online 8 s in 10), each resynced", phone)
		}
	})
}
