package session_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/workload"
)

// counter keeps the operations of every phase by function.
type counter struct {
	mu     sync.Mutex
	ops    map[measure.Function]int
	errors map[measure.Function]int
}

func (c *counter) Observe(o measure.Observation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops[o.Function]++
	if o.Class != measure.OK {
		c.errors[o.Function]++
	}
}

// TestScriptsPerformThePlansSteps runs each session type alone against the
// embedded target and checks that its sessions performed exactly the
// plan's steps (workload.SessionSteps): each step once per session, the
// repeated step bodies_min..bodies_max times, and nothing else. The plan is
// the one list of a session's steps; this keeps the scripts to it.
func TestScriptsPerformThePlansSteps(t *testing.T) {
	for _, kind := range workload.SessionKinds {
		t.Run(string(kind), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testconfig.Quick(t, 2*time.Second)
				s := &cfg.Sessions
				s.Check.Weight, s.Read.Weight, s.Cleanup.Weight, s.Folders.Weight, s.Send.Weight = 0, 0, 0, 0, 0
				switch kind {
				case workload.Check:
					s.Check.Weight = 1
				case workload.Read:
					s.Read.Weight = 1
				case workload.Cleanup:
					s.Cleanup.Weight = 1
				case workload.Folders:
					s.Folders.Weight = 1
				case workload.Send:
					s.Send.Weight = 1
				}
				cfg.Load.InboundPerSession = 0
				c := &counter{ops: map[measure.Function]int{}, errors: map[measure.Function]int{}}
				ctx := context.Background()
				if _, err := orchestrator.Run(ctx, ctx, cfg, orchestrator.Options{Network: memnet.New(), Observer: c}); err != nil {
					t.Fatal(err)
				}
				steps := workload.SessionSteps(kind)
				n := c.ops[steps[0].Function] // every session starts with its first step
				if n < 5 {
					t.Fatalf("only %d %s sessions ran", n, kind)
				}
				want := map[measure.Function]bool{}
				for _, st := range steps {
					want[st.Function] = true
					got := c.ops[st.Function]
					if st.Repeated {
						typ := cfg.Sessions.Type(kind)
						if got < n*typ.BodiesMin || got > n*typ.BodiesMax {
							t.Errorf("%s: %d operations for %d sessions, want %d..%d each", st.Function, got, n, typ.BodiesMin, typ.BodiesMax)
						}
						continue
					}
					if got != n {
						t.Errorf("%s: %d operations for %d sessions", st.Function, got, n)
					}
				}
				for f, got := range c.ops {
					if !want[f] && !metrics.IsDelivery(f) {
						t.Errorf("%s sessions performed %d %s, not one of their steps", kind, got, f)
					}
					if c.errors[f] > 0 {
						t.Errorf("%s: %d errors against the embedded target", f, c.errors[f])
					}
				}
			})
		})
	}
}
