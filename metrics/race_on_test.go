//go:build race

package metrics

// raceEnabled: the race detector slows the 10^6-observation test ~30×.
const raceEnabled = true
