package delivery

import "fmt"

// ClockCheck compares the server's clock with mailbench's: INTERNALDATE
// based delivery times are off by the skew.
type ClockCheck struct {
	// SkewMs is the server's clock minus mailbench's, in milliseconds: the
	// probe's INTERNALDATE (taken at mid-second) minus the middle of its
	// APPEND.
	SkewMs int64 `json:"skew_ms"`
	// UncertaintyMs bounds the error of SkewMs: half a second (the
	// INTERNALDATE's resolution) plus half the APPEND's round trip.
	UncertaintyMs int64 `json:"uncertainty_ms"`
	// Method says how it was measured.
	Method string `json:"method"`
}

// String renders c for the report's header.
func (c ClockCheck) String() string {
	return fmt.Sprintf("%+.1f s ±%.1f s (server − mailbench, %s)", float64(c.SkewMs)/1000, float64(c.UncertaintyMs)/1000, c.Method)
}
