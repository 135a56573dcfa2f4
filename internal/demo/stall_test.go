package demo

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

func TestStallGateWait(t *testing.T) {
	tests := []struct {
		name     string
		stall    bool
		deadline time.Duration // 0: none
		resumeAt time.Duration // 0: never
		closeAt  time.Duration // 0: never
		wantErr  error
		wantAt   time.Duration
	}{
		{name: "open gate passes at once", stall: false, deadline: time.Second, wantErr: nil, wantAt: 0},
		{name: "resume releases", stall: true, deadline: 10 * time.Second, resumeAt: 3 * time.Second, wantErr: nil, wantAt: 3 * time.Second},
		{name: "deadline expires", stall: true, deadline: 2 * time.Second, resumeAt: 5 * time.Second, wantErr: os.ErrDeadlineExceeded, wantAt: 2 * time.Second},
		{name: "close releases", stall: true, closeAt: time.Second, wantErr: net.ErrClosed, wantAt: time.Second},
		{name: "no deadline waits for resume", stall: true, resumeAt: time.Hour, wantErr: nil, wantAt: time.Hour},
		{name: "deadline already past", stall: true, deadline: -time.Second, resumeAt: time.Second, wantErr: os.ErrDeadlineExceeded, wantAt: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var g stallGate
				g.set(tt.stall)
				g.set(tt.stall) // setting twice is harmless
				closed := make(chan struct{})
				if tt.resumeAt > 0 {
					time.AfterFunc(tt.resumeAt, func() { g.set(false) })
				}
				if tt.closeAt > 0 {
					time.AfterFunc(tt.closeAt, func() { close(closed) })
				}
				var deadline time.Time
				if tt.deadline != 0 {
					deadline = time.Now().Add(tt.deadline)
				}
				start := time.Now()
				err := g.wait(closed, deadline)
				if !errors.Is(err, tt.wantErr) || time.Since(start) != tt.wantAt {
					t.Errorf("wait() = %v after %v, want %v after %v", err, time.Since(start), tt.wantErr, tt.wantAt)
				}
				g.set(false) // release timers' targets before the bubble ends
			})
		})
	}
}

// TestStallConnHoldsBothDirections checks, over an in-memory pipe, that a
// stall holds back a write and the delivery of data that arrived, that
// deadlines still apply, and that resuming lets everything through.
func TestStallConnHoldsBothDirections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, client := net.Pipe()
		var g stallGate
		sc := newStallConn(server, &g)
		defer sc.Close()
		defer client.Close()

		// A read already pending when the stall starts delivers nothing
		// until the stall ends.
		got := make(chan string, 1)
		go func() {
			buf := make([]byte, 16)
			n, _ := sc.Read(buf)
			got <- string(buf[:n])
		}()
		synctest.Wait()
		g.set(true)
		go client.Write([]byte("a1 NOOP\r\n"))
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case s := <-got:
			t.Fatalf("stalled read returned %q", s)
		default:
		}

		// A write while stalled respects its deadline.
		sc.SetWriteDeadline(time.Now().Add(time.Second))
		start := time.Now()
		if _, err := sc.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("stalled Write = %v after %v, want deadline exceeded after 1s", err, time.Since(start))
		}
		sc.SetWriteDeadline(time.Time{})

		g.set(false)
		if s := <-got; s != "a1 NOOP\r\n" {
			t.Errorf("read after resume = %q", s)
		}
		go sc.Write([]byte("a1 OK\r\n"))
		buf := make([]byte, 16)
		n, err := client.Read(buf)
		if err != nil || string(buf[:n]) != "a1 OK\r\n" {
			t.Errorf("client read after resume = %q, %v", buf[:n], err)
		}

		// Close releases a stalled reader.
		g.set(true)
		errc := make(chan error, 1)
		go func() {
			_, err := sc.Read(make([]byte, 1))
			errc <- err
		}()
		synctest.Wait()
		sc.Close()
		if err := <-errc; !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("stalled Read after Close = %v, want closed", err)
		}
		g.set(false)
	})
}
