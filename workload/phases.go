package workload

import "time"

// Phase is one part of a run's timeline. Its value is its only spelling:
// in reports, CSV files, progress lines and `mailbench check`.
type Phase string

// The phases of a run, in order. Only Measurement is recorded.
const (
	Warmup      Phase = "warmup"      // sessions run, nothing is recorded
	Measurement Phase = "measurement" // recorded: an operation counts when it starts here
	Rampdown    Phase = "rampdown"    // no new sessions; running ones finish
	Settle      Phase = "settle"      // no sessions; deliveries are awaited
)

// Window is a run's timeline on the wall clock. It is computed once, from
// the run's start and the configured phase lengths (PhasesConfig.Window),
// and handed to everything that needs to know a phase: the runner, the
// recorder, the delivery checker and the report. It doesn't perform I/O.
type Window struct {
	Start        time.Time // the run's clock origin: arrivals are offsets from it
	MeasureStart time.Time // end of warm-up
	MeasureEnd   time.Time // end of measurement: the last arrival is before it
	RampdownEnd  time.Time // running sessions are cut here
}

// Window returns the timeline of a run that starts at start.
func (p PhasesConfig) Window(start time.Time) Window {
	ms := start.Add(p.Warmup.Duration)
	me := ms.Add(p.Measurement.Duration)
	return Window{Start: start, MeasureStart: ms, MeasureEnd: me, RampdownEnd: me.Add(p.Rampdown.Duration)}
}

// PhaseAt returns the phase that t lies in: warm-up before the
// measurement window, ramp-down from its end on.
func (w Window) PhaseAt(t time.Time) Phase {
	switch {
	case t.Before(w.MeasureStart):
		return Warmup
	case t.Before(w.MeasureEnd):
		return Measurement
	}
	return Rampdown
}

// Measured reports whether t lies in the measurement window [MeasureStart,
// MeasureEnd).
func (w Window) Measured(t time.Time) bool {
	return !t.Before(w.MeasureStart) && t.Before(w.MeasureEnd)
}

// Offset returns the offsets of the window's boundaries from Start, the
// form in which the arrival schedule counts time.
func (w Window) Offset(t time.Time) time.Duration { return t.Sub(w.Start) }
