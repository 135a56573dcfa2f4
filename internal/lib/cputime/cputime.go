// Package cputime reads the process's own CPU time: the generator's health
// (package metrics) and the runtime's adaptive cores (package runtimetune)
// both go by it.
package cputime

import "time"

// Process returns the process's user and system CPU time so far, and
// whether it is known on this system. It makes one system call.
func Process() (time.Duration, bool) { return process() }
