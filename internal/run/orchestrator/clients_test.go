package orchestrator

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/memnet"
	"github.com/mailbench/mailbench/report"
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
		if run.Clients.Failing() != "" || slices.Contains(run.Table.Failing, report.ClientsRow) {
			t.Errorf("a held population fails the run: %q", run.Table.Failing)
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
		if err := report.WriteText(&text, run); err != nil {
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
