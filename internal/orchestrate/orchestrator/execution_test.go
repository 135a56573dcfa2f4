package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/testing/memnet"
)

// TestNewStartsNothing: New works the run out without starting any part:
// no listener is up on the sink's address, and Close on an Execution that
// never ran releases nothing and may be called again.
func TestNewStartsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 2*time.Second)
		cfg.Sink.Listen = "127.0.0.1:2526"
		nw := memnet.New()
		e, err := New(context.Background(), cfg, Options{Network: nw})
		if err != nil {
			t.Fatal(err)
		}
		if e.Plan() == nil || e.Plan().SessionsPerHour != cfg.Load.SessionsPerHour {
			t.Fatalf("plan %+v", e.Plan())
		}
		if c, err := nw.DialContext(context.Background(), "tcp", cfg.Sink.Listen); err == nil {
			c.Close()
			t.Fatal("the sink listens before Run")
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestExecutionStopAndClose: the stop context done during Run ends the
// arrivals and the run reports, partial, with its operations in the
// results stream, which the run flushes and does not close; Close
// afterwards changes nothing. A stop done before Run makes the run stop at
// once.
func TestExecutionStopAndClose(t *testing.T) {
	for _, early := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			cfg := shortQuick(t, 6*time.Second)
			var results closeCounter
			e, err := New(context.Background(), cfg, Options{Network: memnet.New(), Results: &results})
			if err != nil {
				t.Fatal(err)
			}
			stop, stopNow := context.WithCancel(context.Background())
			defer stopNow()
			if early {
				stopNow()
			} else {
				time.AfterFunc(2*time.Second, stopNow)
			}
			rc, release := schedule.NewRunContexts(stop, context.Background())
			defer release()
			start := time.Now()
			run, err := e.Run(rc)
			if err != nil && !errors.As(err, new(*OutputError)) {
				t.Fatal(err)
			}
			if !run.Partial {
				t.Errorf("early %v: a stopped run is not marked partial", early)
			}
			if el := time.Since(start); el >= 6*time.Second+cfg.Phases.Rampdown.Duration+10*time.Second {
				t.Errorf("early %v: the stopped run took %v", early, el)
			}
			if !early && run.SessionsStarted == 0 {
				t.Error("no session ran before the stop")
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if lines := strings.Count(results.String(), "\n"); results.closed || !early && lines < 2 {
				t.Errorf("early %v: the results stream holds %d lines, closed %v: want the header and the operations, not closed", early, lines, results.closed)
			}
		})
	}
}

// closeCounter is a results stream that says whether it was closed.
type closeCounter struct {
	bytes.Buffer
	closed bool
}

func (c *closeCounter) Close() error { c.closed = true; return nil }
