package orchestrator

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/measure"
)

// TestStuckStartIsTheServers: an IMAP server that answers nothing for the
// first 5 s of a run (op_timeout 2 s) holds back the clock check and the
// watchers, but none of the sessions: the run is not GENERATOR-BOUND, and
// the stall shows in the rows as IMAP Connect timeouts, the server's.
func TestStuckStartIsTheServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shardTestConfig(t)
		cfg.Phases.Measurement.Duration = 20 * time.Second
		ctx := context.Background()
		nw := memnet.New()
		sink, sinkTLS, err := startSink(cfg, nw, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		users, err := cfg.LoadUsers()
		if err != nil {
			t.Fatal(err)
		}
		gen, err := message.NewGenerator(cfg.Seed, sizesOf(cfg))
		if err != nil {
			t.Fatal(err)
		}
		eps := endpoints.Settings(cfg)
		imapCfg, smtpCfg := eps.IMAP, eps.Submit
		tg, err := startEmbedded(cfg, nw, users, gen, sink, sinkTLS, &imapCfg, &smtpCfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		tg.StallIMAP(true)
		time.AfterFunc(5*time.Second, func() { tg.StallIMAP(false) })

		run, err := Run(ctx, ctx, cfg, Options{Network: nw, ShardOptions: ShardOptions{Target: tg}})
		if err != nil {
			t.Fatal(err)
		}
		if why := run.GeneratorBound(); len(why) > 0 {
			t.Errorf("GENERATOR-BOUND for a server stuck at the start: %q", why)
		}
		if run.SessionsLate != 0 {
			t.Errorf("%d sessions late: the stuck server held back the schedule", run.SessionsLate)
		}
		var timeouts int64
		for _, fs := range run.Functions {
			if fs.Function == measure.IMAPConnect {
				timeouts = fs.Errors[measure.Timeout]
			}
		}
		if timeouts == 0 {
			t.Errorf("no IMAP Connect timeouts: the stall at the start is missing from the rows")
		}
	})
}
