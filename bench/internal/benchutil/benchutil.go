// Package benchutil holds what the bench programs share: the loopback-only
// rule for the addresses they serve or drive, and a CPU profile that runs
// until the program stops it.
package benchutil

import (
	"fmt"
	"net"
	"os"
	"runtime/pprof"
)

// Loopback returns an error unless addr is host:port with a loopback IP:
// benchmarks serve and send on 127.0.0.1 or [::1] only. flagName names the
// flag in the error. It doesn't perform I/O.
func Loopback(flagName, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-%s %s: %w", flagName, addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-%s %s: loopback addresses only", flagName, addr)
	}
	return nil
}

// StartCPUProfile starts a CPU profile written to path and returns the
// function that stops it and closes the file; with path "" it does
// nothing and the stop function is a no-op.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
