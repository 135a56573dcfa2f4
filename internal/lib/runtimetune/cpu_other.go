//go:build !unix

package runtimetune

import "time"

// processCPU is not known here: the adaptation then goes by the waits to
// run alone.
func processCPU() time.Duration { return 0 }
