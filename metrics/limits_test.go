package metrics

import (
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// defaultLimits are the SPECmail2008 limits: 5 s for every function, 60 s
// for the delivery times.
func defaultLimits() map[measure.Function]time.Duration {
	m := map[measure.Function]time.Duration{}
	for _, f := range measure.SPECFunctions {
		m[f] = 5 * time.Second
	}
	m[measure.DeliveryLocal], m[measure.DeliveryRemote] = time.Minute, time.Minute
	return m
}

// window is a run's timeline whose measurement window is [start, end),
// with as long a warm-up before and no ramp-down after.
func window(start, end time.Time) workload.Window {
	return workload.Window{Start: start.Add(-end.Sub(start)), MeasureStart: start, MeasureEnd: end, RampdownEnd: end}
}
