//go:build !linux

package runtimetune

type threadSlack struct{}

// newThreadSlack: sysmon's slack is set on Linux only.
func newThreadSlack() *threadSlack { return nil }

func (*threadSlack) Set(bool) {}
func (*threadSlack) Sweep()   {}
