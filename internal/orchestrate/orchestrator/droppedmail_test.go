package orchestrator

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
)

// A server slow to answer DATA keeps each inbound delivery open longer
// than the inbound stream's cap allows at its rate: the inbound mail the
// stream could not start is counted at mailbench's cap, named with the cap
// in the report, and fails the run, as dropped sessions do (it is load the
// server was never offered). Before, a run at 5,000,000 sessions/hour
// dropped 27% of its inbound mail with no cause given and was COMPLIANT.
func TestRunDroppedInboundMail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := shortQuick(t, 6*time.Second)
		cfg.Load.MaxConcurrent = 8     // the stream's cap: 2
		cfg.Load.InboundPerSession = 2 // 20 inbound messages a second
		cfg.Compliance.MaxDroppedPercent = 1
		ctx := context.Background()
		opts := Options{Network: memnet.New(), EmbeddedOptions: func(o *demo.Options) {
			o.Latency = map[string]time.Duration{"DATA": 1500 * time.Millisecond}
		}}
		run, err := Run(ctx, ctx, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		in := run.Inbound
		if in.Dropped == 0 || in.DroppedAtCap != in.Dropped || in.MaxConcurrent != 2 || in.Started == 0 {
			t.Fatalf("inbound %+v: want drops, all at the cap of 2, and some started", in)
		}
		if !slices.Contains(run.Table.Failing, report.DroppedInboundRow) || run.Table.Compliant {
			t.Errorf("failing %q (compliant %v): want %q", run.Table.Failing, run.Table.Compliant, report.DroppedInboundRow)
		}
		if !slices.ContainsFunc(run.Warnings, func(w string) bool { return strings.Contains(w, "inbound messages dropped") }) {
			t.Errorf("warnings %q lack the dropped inbound mail", run.Warnings)
		}
		var buf bytes.Buffer
		if err := render.WriteText(&buf, run); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(buf.String()), " ") // the renderer wraps lines
		for _, want := range []string{
			report.FormatWhole(float64(in.Dropped)) + " inbound messages dropped: " + report.FormatWhole(float64(in.Dropped)) +
				" at the generator's cap of 2 concurrent deliveries (a quarter of load.max_concurrent_sessions)",
			"- Dropped inbound mail: ",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("report lacks %q:\n%s", want, buf.String())
			}
		}
	})
}
