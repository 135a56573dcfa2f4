package orchestrator

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/testing/memnet"
)

// TestStagesAlone: the first stages of a run, taken alone, start their
// parts as fields of the Execution: the sink listens on sink.listen, the
// embedded target serves the run's users at the clients' settings, and
// the recorder's window starts at the intended start. Close releases both
// listeners.
func TestStagesAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 2*time.Second)
		nw := memnet.New()
		e, err := New(context.Background(), cfg, Options{Network: nw})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if err := e.startSink(); err != nil {
			t.Fatal(err)
		}
		if e.sink == nil {
			t.Fatal("no sink")
		}
		sinkAddr := e.sink.Addr().String()
		if c, err := nw.DialContext(context.Background(), "tcp", sinkAddr); err != nil {
			t.Fatalf("the sink does not listen: %v", err)
		} else {
			c.Close()
		}
		if err := e.startTarget(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		u := e.users[0]
		c, err := imapclient.Connect(ctx, e.eps.IMAP, u.Login, u.Password)
		if err != nil {
			t.Fatalf("the embedded target at %s: %v", e.eps.IMAP.Address, err)
		}
		if err := c.Logout(ctx); err != nil {
			t.Fatal(err)
		}
		c.Close()
		before := time.Now()
		e.startRecorder()
		if e.rec == nil || e.win.Start.Before(before) || e.win.MeasureStart.Sub(e.win.Start) != cfg.Phases.Warmup.Duration {
			t.Errorf("recorder %v over window %+v", e.rec, e.win)
		}
		if _, ok := e.use.Stop(); ok {
			t.Error("the generator's use was measured before the window")
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		for _, addr := range []string{sinkAddr, e.eps.IMAP.Address} {
			if c, err := nw.DialContext(ctx, "tcp", addr); err == nil {
				c.Close()
				t.Errorf("%s still listens after Close", addr)
			}
		}
	})
}
