package testutil

import (
	"net"
	"testing"
)

// FreeAddr is a loopback address (127.0.0.1:port) free a moment ago, for a
// listener that must be named before it starts (a server told where to
// relay, a manager's flag). Another process may take it in between; tests
// accept that.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
