//go:build !linux

package quickack

const supported = false

func setQuickAck(uintptr) {}
