package imapclient

// Test for mailbench's read-buffer.patch: Options.ReadBufferSize sizes the
// buffer responses are read through; zero keeps bufio's default.

import (
	"net"
	"testing"
)

func TestPatchReadBufferSize(t *testing.T) {
	for _, tc := range []struct{ option, want int }{{0, 4096}, {-1, 4096}, {16 << 10, 16 << 10}, {100, 100}} {
		client, server := net.Pipe()
		c := New(client, &Options{ReadBufferSize: tc.option})
		if got := c.br.Size(); got != tc.want {
			t.Errorf("ReadBufferSize %d: buffer of %d bytes, want %d", tc.option, got, tc.want)
		}
		server.Close()
		c.Close()
	}
}
