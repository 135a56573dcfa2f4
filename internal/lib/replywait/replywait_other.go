//go:build !unix

package replywait

import "net"

// MaxHeld is the largest write held for the next read (unix only).
const MaxHeld = 16 << 10

// Wrap returns c: holding writes needs the unix read and write system
// calls on the socket.
func Wrap(c net.Conn) net.Conn { return c }
