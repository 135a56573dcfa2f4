//go:build !race

package imapclient

// raceEnabled: the tests of buffer-pool.patch run under the race detector.
const raceEnabled = false
