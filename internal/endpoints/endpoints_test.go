package endpoints

import (
	"context"
	"net"
	"slices"
	"testing"
)

// TestSourceDialer: connections come from each source address in turn.
func TestSourceDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
			c.Close()
		}
	}()
	dial := SourceDialer([]string{"127.0.0.2", "127.0.0.3"})
	var got []string
	for range 4 {
		c, err := dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Skipf("this machine cannot connect from 127.0.0.2/3: %v", err)
		}
		c.Close()
		got = append(got, <-from)
	}
	if want := []string{"127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"}; !slices.Equal(got, want) {
		t.Errorf("connections came from %v, want %v", got, want)
	}
	if SourceDialer(nil) != nil {
		t.Error("no source addresses: want the clients' own dialer (nil)")
	}
}
