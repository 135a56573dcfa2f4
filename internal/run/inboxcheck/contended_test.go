package inboxcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// contendedProxy stands in front of an IMAP server and answers the first
// refusals LOGINs with a bare "NO database is locked", as a contended
// all-in-one server did, passing everything else through.
func contendedProxy(t *testing.T, server string, refusals int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var left atomic.Int64
	left.Store(refusals)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", server)
				if err != nil {
					return
				}
				defer s.Close()
				go io.Copy(c, s)
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if f := strings.Fields(line); len(f) >= 2 && strings.EqualFold(f[1], "LOGIN") && left.Add(-1) >= 0 {
						fmt.Fprintf(c, "%s NO database is locked\r\n", f[0])
						continue
					}
					if _, err := io.WriteString(s, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestCheckerRetriesContendedLogin: the checker's LOGIN refused with a
// bare NO twice is tried again at once (not at the next check), and the
// refusals are not counted as errors: every delivery is found.
func TestCheckerRetriesContendedLogin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, tg, cusers := deliverThree(t, ctx)
	ch := New(l, Config{IMAP: imapclient.Config{Address: contendedProxy(t, tg.IMAPAddr(), 2), Timeout: netTimeout}, Users: cusers,
		SettlePause: 50 * time.Millisecond, SettleMargin: time.Second})
	if left := ch.Settle(ctx, time.Now().Add(15*time.Second)); left != 0 {
		t.Errorf("%d deliveries left", left)
	}
	if st := ch.Stats(); st.Errors != 0 {
		t.Errorf("stats %+v: the contended LOGINs were counted as errors", st)
	}
}

// withholdingProxy stands in front of an IMAP server and keeps back the
// last FETCH response of the first FETCH that asks for ENVELOPE, as a
// server does whose SELECT counts a delivery in UIDNEXT before a FETCH
// returns it (a message still being saved).
func withholdingProxy(t *testing.T, server string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var done atomic.Bool
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", server)
				if err != nil {
					return
				}
				defer s.Close()
				var hideTag atomic.Pointer[string]
				go func() { // server to client, a response (with its literals) at a time
					defer c.Close()
					br := bufio.NewReader(s)
					var held []string
					for {
						resp, err := readResponse(br)
						if err != nil {
							return
						}
						if tag := hideTag.Load(); tag != nil {
							if strings.HasPrefix(resp, "* ") && strings.Contains(resp, " FETCH ") {
								held = append(held, resp)
								continue
							}
							if strings.HasPrefix(resp, *tag+" ") {
								for _, h := range held[:max(len(held)-1, 0)] {
									io.WriteString(c, h)
								}
								held = nil
								hideTag.Store(nil)
							}
						}
						if _, err := io.WriteString(c, resp); err != nil {
							return
						}
					}
				}()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if f := strings.Fields(line); len(f) >= 2 && strings.EqualFold(f[1], "FETCH") &&
						strings.Contains(line, "ENVELOPE") && done.CompareAndSwap(false, true) {
						hideTag.Store(&f[0])
					}
					if _, err := io.WriteString(s, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// readResponse reads one response line and the literals it announces.
func readResponse(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		b.WriteString(line)
		trimmed := strings.TrimSuffix(line, "\r\n")
		open := strings.LastIndexByte(trimmed, '{')
		if !strings.HasSuffix(trimmed, "}") || open < 0 {
			return b.String(), nil
		}
		var n int
		if _, err := fmt.Sscanf(trimmed[open:], "{%d}", &n); err != nil {
			return b.String(), nil
		}
		lit := make([]byte, n)
		if _, err := io.ReadFull(br, lit); err != nil {
			return "", err
		}
		b.Write(lit)
	}
}

// TestCheckerFetchesWhatUIDNEXTCountedEarly: the first check's FETCH does
// not return the newest of three deliveries although SELECT's UIDNEXT
// counts it; the next check fetches it, instead of taking UIDNEXT's word
// that it was looked at and reporting it missing.
func TestCheckerFetchesWhatUIDNEXTCountedEarly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, tg, cusers := deliverThree(t, ctx)
	ch := New(l, Config{IMAP: imapclient.Config{Address: withholdingProxy(t, tg.IMAPAddr()), Timeout: netTimeout}, Users: cusers,
		SettlePause: 50 * time.Millisecond, SettleMargin: time.Second})
	if left := ch.Settle(ctx, time.Now().Add(15*time.Second)); left != 0 {
		t.Errorf("%d deliveries left: the one the first FETCH withheld was not fetched again", left)
	}
	if st := ch.Stats(); st.Checks < 2 || st.Fetched != 3 {
		t.Errorf("stats %+v: want at least 2 checks and 3 messages fetched (2, then the withheld one)", st)
	}
}

// deliverThree starts the demo target with one user, submits three
// messages to that user and records their acceptance in a new ledger.
func deliverThree(t *testing.T, ctx context.Context) (*delivery.Ledger, *demo.Target, []workload.User) {
	t.Helper()
	tusers := []workload.User{{Login: "user1", Password: "pw-1"}}
	addr := "user1@" + demo.DefaultLocalDomain
	cusers := []workload.User{{Address: addr, Login: "user1", Password: "pw-1"}}
	var obs testutil.ObservationLog
	l := delivery.NewLedger(run, []string{addr}, &obs)
	l.SetLimits(10*time.Second, 10*time.Second)
	tg, err := demo.Start(ctx, demo.Options{Users: tusers, OpTimeout: netTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	gen, err := message.NewGenerator(1, []int{1024})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		env := message.Envelope{ID: delivery.NewID(run, uint64(i)), From: addr, To: []string{addr}, Subject: "t", Sent: time.Now()}
		sc, err := smtpclient.Connect(ctx, smtpclient.Config{Address: tg.SMTPAddr(), Timeout: netTimeout})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Send(ctx, env.From, env.To, bytes.NewReader(gen.Message(env, 1024, uint64(i)))); err != nil {
			t.Fatal(err)
		}
		l.Accepted(measure.Submission{ID: env.ID, Accepted: time.Now(), Local: env.To})
		sc.Close()
	}
	return l, tg, cusers
}
