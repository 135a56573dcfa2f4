// Package ctxsleep is a pause that a context can cut short: the waits
// between retries, reconnects and polls of the run's clients.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done; it reports whether ctx is still
// live (false: ctx ended first). A d of zero or less returns at once.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
