package smtpclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// silentFromMail is a minimal SMTP server that answers every command until
// the n-th MAIL (counting from 1), then reads on and answers nothing: a
// server that hangs in the middle of a kept connection.
func silentFromMail(n int) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, _ <-chan struct{}) {
		br := bufio.NewReader(c)
		io.WriteString(c, "220 localhost ESMTP\r\n")
		mails, inData := 0, false
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if inData {
				if line == ".\r\n" {
					inData = false
					io.WriteString(c, "250 2.0.0 queued\r\n")
				}
				continue
			}
			cmd := strings.ToUpper(strings.TrimSpace(line))
			switch {
			case strings.HasPrefix(cmd, "MAIL"):
				if mails++; mails >= n {
					io.Copy(io.Discard, br)
					return
				}
				io.WriteString(c, "250 ok\r\n")
			case strings.HasPrefix(cmd, "EHLO"):
				io.WriteString(c, "250-localhost\r\n250 SIZE 10000000\r\n")
			case cmd == "DATA":
				inData = true
				io.WriteString(c, "354 go ahead\r\n")
			case cmd == "QUIT":
				io.WriteString(c, "221 bye\r\n")
				return
			default:
				io.WriteString(c, "250 ok\r\n")
			}
		}
	}
}

// TestWatchdogAcrossOperations covers the watchdog a Client keeps from one
// operation to the next: each operation is bounded by its own deadline and
// context, whatever the operations before it armed or left behind.
func TestWatchdogAcrossOperations(t *testing.T) {
	const from, to = "a@example.test", "b@example.test"
	send := func(ctx context.Context, c *Client) error {
		_, err := c.Send(ctx, from, []string{to}, strings.NewReader(testMsg))
		return err
	}
	const slack = 2 * time.Second

	t.Run("each operation its own deadline, after idling past the last", func(t *testing.T) {
		t.Parallel()
		const timeout = 300 * time.Millisecond
		rec := &recorder{}
		c, err := Connect(context.Background(), Config{Address: scriptedServer(t, silentFromMail(2)), Timeout: timeout, Observer: rec})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer c.Close()
		// Idle for longer than Connect's deadline: that deadline, still on
		// the connection, and the timer armed for it must not fail the next
		// operation.
		time.Sleep(2 * timeout)
		if err := send(context.Background(), c); err != nil {
			t.Fatalf("Send after idling past the last deadline: %v", err)
		}
		time.Sleep(2 * timeout)
		start := time.Now()
		err = send(context.Background(), c) // the server goes silent at this MAIL
		elapsed := time.Since(start)
		if !errors.Is(err, measure.ErrTimeout) || elapsed < timeout-50*time.Millisecond || elapsed > timeout+slack {
			t.Errorf("Send to a silent server: %v after %v, want a timeout after %v", err, elapsed, timeout)
		}
	})

	t.Run("a context deadline earlier than the armed timer", func(t *testing.T) {
		t.Parallel()
		c, err := Connect(context.Background(), Config{Address: scriptedServer(t, silentFromMail(1)), Timeout: time.Minute})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = send(ctx, c)
		if d := time.Since(start); d > slack || measure.Classify(err) != measure.Timeout {
			t.Errorf("after %v: %v (class %q), want a timeout at the context's deadline", d, err, measure.Classify(err))
		}
	})

	t.Run("an earlier context's end leaves later operations alone", func(t *testing.T) {
		t.Parallel()
		be := &backend{}
		addr := startServer(t, be, TLSNone, nil)
		first, cancelFirst := context.WithCancel(context.Background())
		c, err := Connect(first, Config{Address: addr, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer c.Close()
		if err := send(first, c); err != nil {
			t.Fatalf("Send under the first context: %v", err)
		}
		cancelFirst() // between operations: nothing runs under it now
		time.Sleep(50 * time.Millisecond)
		second, cancelSecond := context.WithCancel(context.Background())
		defer cancelSecond()
		for i := range 3 {
			if err := send(second, c); err != nil {
				t.Fatalf("Send %d under a second context, the first ended: %v", i+1, err)
			}
		}
		if err := c.Quit(second); err != nil {
			t.Errorf("Quit: %v", err)
		}
		if n := len(be.messages()); n != 4 {
			t.Errorf("server stored %d messages, want 4", n)
		}
	})

	t.Run("a context that ended between operations fails the next at once", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		c, err := Connect(ctx, Config{Address: startServer(t, &backend{}, TLSNone, nil), Timeout: time.Minute})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer c.Close()
		cancel()
		time.Sleep(50 * time.Millisecond) // the registration's callback has run, with nothing to close
		start := time.Now()
		err = send(ctx, c)
		if d := time.Since(start); d > slack || !errors.Is(err, context.Canceled) {
			t.Errorf("after %v: %v, want context.Canceled", d, err)
		}
	})

	t.Run("Close releases the timer and the context registration", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := Connect(ctx, Config{Address: startServer(t, &backend{}, TLSNone, nil), Timeout: time.Minute})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		if c.wd.stopCtx == nil || c.wd.timer == nil {
			t.Fatal("no registration or timer after Connect under a cancellable context")
		}
		stop := c.wd.stopCtx
		c.Close()
		// A long-lived context (a run's) must not keep a registration
		// for every client that ever connected under it.
		if stop() {
			t.Error("the context registration was still in place after Close")
		}
		if c.wd.timer.Stop() {
			t.Error("the timer was still armed after Close")
		}
	})
}
