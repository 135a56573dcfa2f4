package populate

import (
	"sync"
	"sync/atomic"
	"time"
)

// JobProgress is a snapshot of a job (init, clean, verify) for a progress
// display: Done of Total Units since Elapsed. Final is the last snapshot,
// when the job has ended (OK false: it ended with an error).
type JobProgress struct {
	Job, Unit   string
	Done, Total int64
	Elapsed     time.Duration
	Final, OK   bool
}

// progress tells a display how far a job has come, every period and once
// at its end. Add is safe for concurrent use.
type progress struct {
	done  atomic.Int64
	total int64
	job   string
	unit  string
	start time.Time
	show  func(JobProgress)

	stop chan struct{}
	wg   sync.WaitGroup
}

// newProgress starts telling show of a job of total units named job
// (e.g. "init"); unit names the counted things ("messages"). nil show
// shows nothing.
func newProgress(show func(JobProgress), job, unit string, total int64, every time.Duration) *progress {
	pr := &progress{total: total, job: job, unit: unit, start: time.Now(), show: show, stop: make(chan struct{})}
	if show == nil {
		return pr
	}
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
				show(pr.snapshot())
			}
		}
	}()
	return pr
}

func (pr *progress) snapshot() JobProgress {
	return JobProgress{Job: pr.job, Unit: pr.unit, Done: pr.done.Load(), Total: pr.total, Elapsed: time.Since(pr.start)}
}

// Add counts n more units done.
func (pr *progress) Add(n int64) { pr.done.Add(n) }

// Finish stops the display with a last snapshot; ok false marks the job
// as ended by an error.
func (pr *progress) Finish(ok bool) {
	close(pr.stop)
	pr.wg.Wait()
	if pr.show != nil {
		s := pr.snapshot()
		s.Final, s.OK = true, ok
		pr.show(s)
	}
}
