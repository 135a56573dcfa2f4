package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
	"github.com/mailbench/mailbench/workload"
)

// TestRunWithConnectedClients: five users stay connected beside the
// sessions; the report says all five were held at the end of the
// measurement window, each connected once, and their deliveries were
// timed by announcement; the JSON keeps it. A population not held at the
// end of the window (here: a ramp far longer than the run, so that most
// clients have not connected yet) makes the run not compliant, naming the
// connected clients.
func TestRunWithConnectedClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 6*time.Second)
		cfg.Clients.Connected = 5
		cfg.Delivery.WatchUsers = 0 // only the connected clients time by announcement
		ctx := context.Background()
		run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		c := run.Clients
		if c == nil || c.Target != 5 || c.Held != 5 || c.Connects != 5 || c.Reconnects != 0 || len(c.Drops) != 0 {
			t.Fatalf("clients %+v: want 5 held, 5 connects, no drop", c)
		}
		if run.Delivery == nil || run.Delivery.TimedByAnnouncement == 0 || c.Announced == 0 {
			t.Errorf("no delivery timed by a connected client's announcement (announced %d, delivery %+v)", c.Announced, run.Delivery)
		}
		for _, f := range []measure.Function{measure.IMAPIdle, measure.NewMailNotification} {
			if row, ok := run.Table.Row(f); !ok || row.Operations == 0 || !row.Pass {
				t.Errorf("%s: row %+v (present %v): want it measured and passing", f, row, ok)
			}
		}
		if run.Clients.Failing() != "" || slices.Contains(run.Table.Failing, report.ClientsRow) {
			t.Errorf("a held population fails the run: %q", run.Table.Failing)
		}
		// Over time: every interval of the window holds the five.
		if len(run.Timeline) == 0 {
			t.Fatal("no timeline")
		}
		for i, p := range run.Timeline {
			if p.Clients == nil || p.Clients.Target != 5 || p.Clients.Held != 5 || p.Clients.Drops != 0 {
				t.Errorf("interval %d: clients %+v, want 5 of 5 held, none lost", i, p.Clients)
			}
		}
		var b bytes.Buffer
		if err := report.WriteJSON(&b, run); err != nil {
			t.Fatal(err)
		}
		back, err := report.ReadJSON(&b)
		if err != nil {
			t.Fatal(err)
		}
		if back.Clients == nil || back.Clients.Held != 5 || back.Clients.Connects != 5 {
			t.Errorf("JSON round trip: %+v", back.Clients)
		}
		var text bytes.Buffer
		if err := render.WriteText(&text, run); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "held 5 of 5 at the end of the measurement window") {
			t.Errorf("the text report does not say the clients were held:\n%s", text.String())
		}

		cfg = shortQuick(t, 2*time.Second)
		cfg.Clients.Connected = 4
		cfg.Clients.Ramp.Duration = time.Hour // most connect after the run
		run, err = Run(ctx, ctx, cfg, Options{Network: memnet.New()})
		if err != nil {
			t.Fatal(err)
		}
		if run.Clients.Held >= 4 || run.Table.Compliant || !slices.Contains(run.Table.Failing, report.ClientsRow) {
			t.Errorf("held %d of 4, compliant %v, failing %q: want the run failed on its connected clients", run.Clients.Held, run.Table.Compliant, run.Table.Failing)
		}
	})
}

// TestClientUsers: the connected population is the first clients.connected
// users; the shards of a sharded run split exactly them.
func TestClientUsers(t *testing.T) {
	var users []workload.User
	for i := range 20 {
		users = append(users, workload.User{Login: fmt.Sprint(i)})
	}
	logins := func(us []workload.User) string {
		var s []string
		for _, u := range us {
			s = append(s, u.Login)
		}
		return strings.Join(s, " ")
	}
	if got := logins(clientUsers(users, schedule.Shard{}, 5)); got != "0 1 2 3 4" {
		t.Errorf("whole run: %q", got)
	}
	var all []string
	for i := range 3 {
		all = append(all, logins(clientUsers(users, schedule.Shard{Index: i, Count: 3}, 5)))
	}
	if got := strings.Join(all, " | "); got != "0 3 | 1 4 | 2" {
		t.Errorf("3 shards: %q, want the first 5 users split", got)
	}
	if got := clientUsers(users, schedule.Shard{}, 50); len(got) != 20 {
		t.Errorf("more clients than users: %d", len(got))
	}
}
