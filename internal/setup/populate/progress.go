package populate

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progress shows how far a job has come: an mpb bar when its writer is a
// terminal, else one line every period. Add is safe for concurrent use.
type progress struct {
	done  atomic.Int64
	total int64

	bar *mpb.Bar
	p   *mpb.Progress

	stop chan struct{}
	wg   sync.WaitGroup
	// last prints the final line of a plain writer; nil without one.
	last func()
}

// newProgress starts showing a job of total units named name (e.g.
// "init") on w; nil w shows nothing. unit names the counted things in
// the periodic line ("messages").
func newProgress(w io.Writer, name, unit string, total int64, every time.Duration) *progress {
	pr := &progress{total: total, stop: make(chan struct{})}
	if w == nil {
		return pr
	}
	if isTerminal(w) {
		pr.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
		pr.bar = pr.p.AddBar(total,
			mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d/%d "+unit)),
			mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.AverageSpeed(0, " %.0f/s"),
				decor.Name("  ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
		)
		return pr
	}
	start := time.Now()
	// The last line says where the job ended, however short it was.
	pr.last = func() { fmt.Fprintln(w, progressLine(name, unit, pr.done.Load(), total, time.Since(start))) }
	pr.wg.Add(1)
	go func() {
		defer pr.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-pr.stop:
				return
			case <-t.C:
				fmt.Fprintln(w, progressLine(name, unit, pr.done.Load(), total, time.Since(start)))
			}
		}
	}()
	return pr
}

// progressLine renders the periodic line. It doesn't perform I/O.
func progressLine(name, unit string, done, total int64, elapsed time.Duration) string {
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	return fmt.Sprintf("%s: %d/%d %s (%.0f%%), %.0f/s, %v elapsed", name, done, total, unit, pct, rate, elapsed.Round(time.Second))
}

// Add counts n more units done.
func (pr *progress) Add(n int64) {
	pr.done.Add(n)
	if pr.bar != nil {
		pr.bar.IncrInt64(n)
	}
}

// Finish stops the display; ok false marks the job as aborted.
func (pr *progress) Finish(ok bool) {
	close(pr.stop)
	pr.wg.Wait()
	if pr.last != nil {
		pr.last()
	}
	if pr.bar != nil {
		if ok {
			pr.bar.SetTotal(-1, true)
		} else {
			pr.bar.Abort(false)
		}
		pr.p.Wait()
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
