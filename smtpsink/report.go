package smtpsink

import (
	"context"
	"fmt"
	"io"
	"time"
)

// DefaultReportInterval is RunReporter's interval when none is given.
const DefaultReportInterval = 10 * time.Second

// RunReporter writes one line of counts to w every interval (default
// DefaultReportInterval), and a last line when ctx ends, then returns. It is
// meant for the standalone sink; write errors are ignored.
func (s *Sink) RunReporter(ctx context.Context, w io.Writer, every time.Duration) {
	if every <= 0 {
		every = DefaultReportInterval
	}
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	prev, prevAt := s.Counts(), start
	for {
		var now time.Time
		done := false
		select {
		case <-ctx.Done():
			now, done = time.Now(), true
		case now = <-tick.C:
		}
		c := s.Counts()
		n, p50, p99, maxv := s.relaySummary()
		fmt.Fprintln(w, formatReport(reportLine{
			Elapsed: now.Sub(start), Interval: now.Sub(prevAt), Now: c, Prev: prev,
			RelayN: n, RelayP50: p50, RelayP99: p99, RelayMax: maxv, Final: done,
		}))
		if done {
			return
		}
		prev, prevAt = c, now
	}
}

// reportLine is what one reporter line shows.
type reportLine struct {
	Elapsed, Interval            time.Duration
	Now, Prev                    Counts
	RelayN                       int64
	RelayP50, RelayP99, RelayMax time.Duration
	Final                        bool
}

// formatReport renders a reporter line. It doesn't perform I/O.
func formatReport(r reportLine) string {
	rate := 0.0
	if r.Interval > 0 {
		rate = float64(r.Now.Messages-r.Prev.Messages) / r.Interval.Seconds()
	}
	tag := "smtpsink"
	if r.Final {
		tag = "smtpsink final"
	}
	line := fmt.Sprintf("%s t=%s conns=%d active=%d refused=%d msgs=%d (%.1f/s) rcpts=%d bytes=%s rejected=%d errors=%d",
		tag, r.Elapsed.Round(time.Second), r.Now.Connections, r.Now.Active, r.Now.Refused,
		r.Now.Messages, rate, r.Now.Recipients, formatBytes(r.Now.Bytes), r.Now.Rejected, r.Now.Errors)
	if r.Now.Evicted > 0 {
		line += fmt.Sprintf(" evicted=%d", r.Now.Evicted)
	}
	if r.RelayN == 0 {
		return line + " relay n=0"
	}
	return line + fmt.Sprintf(" relay n=%d p50=%s p99=%s max=%s", r.RelayN,
		roundDelay(r.RelayP50), roundDelay(r.RelayP99), roundDelay(r.RelayMax))
}

func roundDelay(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.1f%s", v, suffix)
}
