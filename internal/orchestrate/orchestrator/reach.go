package orchestrator

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mailbench/mailbench/measure"
)

// reachAttempts is how many connects must all have failed, with none
// succeeding, before a run is abandoned as "could not run".
const reachAttempts = 5

// reachWatch abandons a run whose target refuses or times out every
// connection from the start: the first reachAttempts IMAP or SMTP connects
// all failed and none succeeded. Once one connect has succeeded it never
// fires: a server that fails later is a result (not compliant), not a run
// that could not be carried out. It is safe for concurrent use.
type reachWatch struct {
	abandon func(reason string) // called once

	mu      sync.Mutex
	ok      bool // a connect succeeded: disarmed
	fired   bool
	failed  int
	classes map[string]int
	first   string
}

func (w *reachWatch) observe(o measure.Observation) {
	if o.Function != measure.IMAPConnect && o.Function != measure.SMTPConnect || o.Class == measure.Cancelled {
		return
	}
	w.mu.Lock()
	if w.ok || w.fired {
		w.mu.Unlock()
		return
	}
	if o.Class == measure.OK {
		w.ok = true
		w.mu.Unlock()
		return
	}
	w.failed++
	if w.classes == nil {
		w.classes = map[string]int{}
	}
	w.classes[fmt.Sprintf("%s %s", o.Function, o.Class)]++
	if w.first == "" && o.Err != nil {
		w.first = o.Err.Error()
	}
	if w.failed < reachAttempts {
		w.mu.Unlock()
		return
	}
	w.fired = true
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w.classes)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, w.classes[k]))
	}
	reason := fmt.Sprintf("the target refused or timed out all of the first %d connections and accepted none (%s); first error: %s",
		w.failed, strings.Join(parts, ", "), w.first)
	w.mu.Unlock()
	w.abandon(reason)
}
