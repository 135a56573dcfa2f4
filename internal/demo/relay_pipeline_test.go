package demo

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// scriptedRelayHost is a relay host played line by line: it greets,
// answers EHLO with or without PIPELINING, and hands the connection to
// the test's script. Its errors go to errs.
func scriptedRelayHost(t *testing.T, pipelining bool, script func(r *bufio.Reader, c net.Conn) error) (addr string, errs chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	errs = make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errs <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(testTimeout))
		r := bufio.NewReader(c)
		c.Write([]byte("220 relay.test ESMTP\r\n"))
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "EHLO ") {
			errs <- errors.New("no EHLO: " + line)
			return
		}
		if pipelining {
			c.Write([]byte("250-relay.test\r\n250-PIPELINING\r\n250 8BITMIME\r\n"))
		} else {
			c.Write([]byte("250-relay.test\r\n250 8BITMIME\r\n"))
		}
		errs <- script(r, c)
	}()
	return ln.Addr().String(), errs
}

// readBody reads a message up to its end line.
func readBody(r *bufio.Reader) error {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if line == ".\r\n" {
			return nil
		}
	}
}

// TestRelayPipelines: to a relay host that advertises PIPELINING, the
// relay sends MAIL, every RCPT and DATA before it waits for any reply (the
// host here answers nothing until it has all four), and counts a RCPT's
// refusal among the replies; to one that does not, it sends one command
// at a time and waits for each reply.
func TestRelayPipelines(t *testing.T) {
	for _, pipelining := range []bool{true, false} {
		t.Run(map[bool]string{true: "PIPELINING", false: "in turn"}[pipelining], func(t *testing.T) {
			addr, errs := scriptedRelayHost(t, pipelining, func(r *bufio.Reader, c net.Conn) error {
				want := []string{"MAIL FROM:<s@client.test> BODY=8BITMIME", "RCPT TO:<bob@remote.test>", "RCPT TO:<bad@remote.test>", "DATA"}
				replies := []string{"250 2.1.0 ok", "250 2.1.5 ok", "550 5.1.1 no such user", "354 go ahead"}
				if pipelining {
					// Nothing is answered before all four have come.
					for _, w := range want {
						c.SetReadDeadline(time.Now().Add(2 * time.Second))
						line, err := r.ReadString('\n')
						if err != nil {
							return errors.New("waiting for " + w + " before any reply: " + err.Error())
						}
						if line != w+"\r\n" {
							return errors.New("got " + line + ", want " + w)
						}
					}
					c.Write([]byte(strings.Join(replies, "\r\n") + "\r\n"))
				} else {
					for i, w := range want {
						c.SetReadDeadline(time.Now().Add(testTimeout))
						line, err := r.ReadString('\n')
						if err != nil || line != w+"\r\n" {
							return errors.New("got " + line + ", want " + w)
						}
						// The next command must wait for this reply.
						c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
						if _, err := r.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
							return errors.New("a command came before the reply to " + w)
						}
						c.Write([]byte(replies[i] + "\r\n"))
					}
				}
				c.SetReadDeadline(time.Now().Add(testTimeout))
				if err := readBody(r); err != nil {
					return err
				}
				c.Write([]byte("250 2.0.0 queued\r\n"))
				line, _ := r.ReadString('\n') // QUIT once idle, or the end
				if line != "" && line != "QUIT\r\n" {
					return errors.New("after the message: " + line)
				}
				c.Write([]byte("221 bye\r\n"))
				return nil
			})
			tg := startTarget(t, Options{RelayAddr: addr, RelayWorkers: 1, RelayAttempts: 1, RelayTLS: RelayNoTLS, OpTimeout: testTimeout})
			if err := sendMail(tg.SMTPAddr(), "s@client.test", []string{"bob@remote.test", "bad@remote.test"}, testMessage("pipe"), nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "relay to finish", func() bool { return tg.Stats().Queue == 0 })
			if s := tg.Stats(); s.Relayed != 1 || s.RelayFailed != 1 {
				t.Errorf("Stats() = %+v, want 1 relayed and 1 refused", s)
			}
			select {
			case err := <-errs:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(relayCacheIdle + testTimeout):
				t.Fatal("the relay host's script did not end")
			}
		})
	}
}

// TestRelayPipelinedRefusals: a refused MAIL fails every recipient (a 5xx
// for good), and every RCPT refused counts each by its own reply; neither
// sends a message nor tries again, and the relay ends the connection with
// QUIT. With PIPELINING the host answers MAIL, RCPT and DATA at once;
// without, it answers each command (and DATA is not sent).
func TestRelayPipelinedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name            string
		pipelining      bool
		replies         []string // one per command the relay must send
		relayed, failed int64
	}{
		{"MAIL refused for good", true, []string{"554 5.7.1 go away", "503 5.5.1 MAIL first", "503 5.5.1 MAIL first"}, 0, 1},
		{"every RCPT refused", true, []string{"250 ok", "550 5.1.1 no", "503 5.5.1 no valid recipients"}, 0, 1},
		{"MAIL refused for good, in turn", false, []string{"554 5.7.1 go away"}, 0, 1},
		{"every RCPT refused, in turn", false, []string{"250 ok", "550 5.1.1 no"}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, errs := scriptedRelayHost(t, tc.pipelining, func(r *bufio.Reader, c net.Conn) error {
				if tc.pipelining {
					for range tc.replies { // MAIL, RCPT, DATA
						if _, err := r.ReadString('\n'); err != nil {
							return err
						}
					}
					c.Write([]byte(strings.Join(tc.replies, "\r\n") + "\r\n"))
				} else {
					for _, reply := range tc.replies {
						if _, err := r.ReadString('\n'); err != nil {
							return err
						}
						c.Write([]byte(reply + "\r\n"))
					}
				}
				line, err := r.ReadString('\n')
				if err != nil || line != "QUIT\r\n" {
					return fmt.Errorf("after the refusal: %q, %v; want QUIT (no message, no broken connection)", line, err)
				}
				c.Write([]byte("221 bye\r\n"))
				return nil
			})
			tg := startTarget(t, Options{RelayAddr: addr, RelayWorkers: 1, RelayAttempts: 2, RelayRetryDelay: time.Millisecond, RelayTLS: RelayNoTLS, OpTimeout: testTimeout})
			if err := sendMail(tg.SMTPAddr(), "s@client.test", []string{"bob@remote.test"}, testMessage("refused"), nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "relay to finish", func() bool { return tg.Stats().Queue == 0 })
			if s := tg.Stats(); s.Relayed != tc.relayed || s.RelayFailed != tc.failed {
				t.Errorf("Stats() = %+v, want %d relayed, %d failed", s, tc.relayed, tc.failed)
			}
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		})
	}
}
