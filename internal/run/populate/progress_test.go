package populate

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestProgressTicks: on a fake clock, a job that runs 3.5 periods is
// shown three ticks with the units done so far, then its end.
func TestProgressTicks(t *testing.T) {
	for _, ok := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			var got []JobProgress
			pr := newProgress(func(p JobProgress) { got = append(got, p) }, "init", "messages", 10, time.Second)
			for range 3 {
				pr.Add(2)
				time.Sleep(time.Second)
				synctest.Wait()
			}
			pr.Add(4)
			time.Sleep(time.Second / 2)
			pr.Finish(ok)
			if len(got) != 4 {
				t.Fatalf("told %d times (%+v), want 3 ticks and the end", len(got), got)
			}
			for i, p := range got[:3] {
				want := JobProgress{Job: "init", Unit: "messages", Done: int64(2 * (i + 1)), Total: 10, Elapsed: time.Duration(i+1) * time.Second}
				if p != want {
					t.Errorf("tick %d: %+v, want %+v", i, p, want)
				}
			}
			want := JobProgress{Job: "init", Unit: "messages", Done: 10, Total: 10, Elapsed: 3500 * time.Millisecond, Final: true, OK: ok}
			if got[3] != want {
				t.Errorf("end: %+v, want %+v", got[3], want)
			}
		})
	}
}

// TestProgressWithoutDisplay: a nil display starts nothing and Finish
// returns.
func TestProgressWithoutDisplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr := newProgress(nil, "clean", "users", 1, time.Second)
		pr.Add(1)
		pr.Finish(true)
	})
}
