package imapclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	imap "github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"

	"github.com/mailbench/mailbench/measure"
)

// These tests guard against a data race seen under `go test -race
// ./manager`: go-imap's FETCH reader goroutine and a session goroutine both
// reading the connection's bufio.Reader through a fetchLiteralReader. They
// are meant to be run with -race; without it they still check that a cut
// FETCH fails as a cancellation/connection error and never hangs.

// TestFetchCutMidLiteral: a FETCH whose reply stops (or hangs up) in the
// middle of a literal is cut by cancellation, timeout or EOF; the
// operation returns promptly with the right class and the client is closed.
func TestFetchCutMidLiteral(t *testing.T) {
	t.Parallel()
	const header = "* 1 FETCH (UID 1 RFC822.SIZE 2000 FLAGS (\\Seen) "
	partialHeader := header + "BODY[HEADER.FIELDS (FROM TO SUBJECT DATE MESSAGE-ID X-MAILBENCH-ID X-MAILBENCH-SENT)] {900}\r\nFrom: a@b\r\nSubject: cut"
	partialBody := "* 1 FETCH (BODY[] {5000}\r\nFrom: a@b\r\nSubject: cut\r\n\r\nbody"
	// Above 8 KiB go-imap streams the literal from the connection instead
	// of reading it first (internal/goimap small-literal.patch): both
	// paths are cut.
	partialBigBody := "* 1 FETCH (BODY[] {50000}\r\nFrom: a@b\r\nSubject: cut\r\n\r\nbody"
	ops := []struct {
		name, verb, partial string
		fn                  measure.Function
		run                 func(ctx context.Context, c *Client) error
	}{
		{"fetch range", "FETCH", partialHeader, measure.IMAPFetchRange, func(ctx context.Context, c *Client) error {
			_, err := c.FetchRangeEnvelope(ctx, 1, 0)
			return err
		}},
		{"uid fetch range", "UID FETCH", partialHeader, measure.IMAPUIDFetch, func(ctx context.Context, c *Client) error {
			_, err := c.UIDFetchRange(ctx, 1, 0)
			return err
		}},
		{"fetch body", "FETCH", partialBody, measure.IMAPFetchBody, func(ctx context.Context, c *Client) error {
			_, err := c.FetchBody(ctx, 1)
			return err
		}},
		{"fetch big body", "FETCH", partialBigBody, measure.IMAPFetchBody, func(ctx context.Context, c *Client) error {
			_, err := c.FetchBody(ctx, 1)
			return err
		}},
	}
	cuts := []struct {
		name   string
		action fakeAction
		cancel bool // cancel the context (else: Timeout elapses, or the server hangs up)
		class  measure.ErrorClass
	}{
		{"cancel", stall, true, measure.Cancelled},
		{"timeout", stall, false, measure.Timeout},
		{"hang-up", hangUp, false, measure.Connection},
	}
	for _, op := range ops {
		for _, cut := range cuts {
			t.Run(op.name+"/"+cut.name, func(t *testing.T) {
				t.Parallel()
				fs := startFake(t, fakeGreeting, loginOK(func(cmd string) (string, fakeAction) {
					switch {
					case strings.HasPrefix(cmd, "SELECT "):
						return selectOK, reply
					case strings.HasPrefix(cmd, op.verb+" "):
						return op.partial, cut.action
					}
					return "%[1]s BAD unexpected\r\n", reply
				}))
				rec := &recorder{}
				c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: shortTimeout, Observer: rec}, testUser, testPassword)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.SelectInbox(context.Background()); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if cut.cancel {
					time.AfterFunc(shortTimeout/4, cancel)
				}
				start := time.Now()
				err = op.run(ctx, c)
				checkElapsed(t, start)
				if err == nil {
					t.Fatal("cut FETCH succeeded")
				}
				if cut.cancel {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("err %v, want context.Canceled", err)
					}
				} else if got := measure.Classify(err); got != cut.class {
					t.Errorf("class %v (%v), want %v", got, err, cut.class)
				}
				if o := rec.last(t); o.Function != op.fn || o.Err == nil {
					t.Errorf("observation %+v", o)
				}
				if _, err := c.SelectInbox(context.Background()); !errors.Is(err, ErrClosed) {
					t.Errorf("client usable after a cut FETCH: %v", err)
				}
			})
		}
	}
}

// bigMessage renders a message of about size bytes whose header carries
// mailbench trace fields and a long folded Subject (so that the header
// literals of the range fetches span several reads).
func bigMessage(id string, sent time.Time, size int) []byte {
	var subj strings.Builder
	for subj.Len() < 6000 {
		subj.WriteString(" subject-word-" + id + "\r\n")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: sender@remote.test\r\nTo: %s@example.test\r\nSubject: big %s\r\n%s", testUser, id, strings.TrimSuffix(subj.String(), "\r\n")+"\r\n")
	fmt.Fprintf(&b, "Date: %s\r\nMessage-Id: <%s@mailbench>\r\n", sent.Format(time.RFC1123Z), id)
	fmt.Fprintf(&b, "%s: %s\r\n%s: %s\r\n\r\n", HeaderID, id, HeaderSent, sent.Format(time.RFC3339Nano))
	line := strings.Repeat("x", 76) + "\r\n"
	for b.Len() < size {
		b.WriteString(line)
	}
	return b.Bytes()
}

// startBigMem starts an in-process imapserver+imapmemserver on 127.0.0.1
// whose user's INBOX holds n messages of 256 KiB to 1 MiB.
func startBigMem(t *testing.T, n int) string {
	t.Helper()
	mem := imapmemserver.New()
	u := imapmemserver.NewUser(testUser, testPassword)
	if err := u.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= n; i++ {
		size := 256<<10 + (i*197<<10)%(768<<10)
		msg := bigMessage(fmt.Sprintf("big-%d", i), base.Add(time.Duration(i)*time.Second), size)
		if _, err := u.Append("INBOX", literal{bytes.NewReader(msg), int64(len(msg))}, &imap.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mem.AddUser(u)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}},
		InsecureAuth: true,
		Logger:       quietLogger{},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestFetchCancelStress: several sessions run FetchBody, FetchRangeEnvelope
// and UIDFetchRange over large messages with contexts cancelled, and
// timeouts elapsing, at random short delays, reconnecting after every cut.
// Every operation either succeeds with consistent data or fails as a
// cancellation, timeout or connection error. Run it with -race.
func TestFetchCancelStress(t *testing.T) {
	t.Parallel()
	const (
		messages = 6
		sessions = 4
	)
	duration := 2 * time.Second
	if testing.Short() {
		duration = 500 * time.Millisecond
	}
	addr := startBigMem(t, messages)
	stopAt := time.Now().Add(duration)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var cut, ok int
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 99))
			var c *Client
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			for time.Now().Before(stopAt) {
				if c == nil || c.closed.Load() {
					if c != nil {
						c.Close()
					}
					timeout := time.Duration(5+rng.IntN(40)) * time.Millisecond
					if rng.IntN(3) > 0 {
						timeout = 2 * time.Second
					}
					var err error
					c, err = Connect(context.Background(), Config{Address: addr, Timeout: 2 * time.Second}, testUser, testPassword)
					if err != nil {
						t.Errorf("connect: %v", err)
						return
					}
					if _, err := c.SelectInbox(context.Background()); err != nil {
						t.Errorf("select: %v", err)
						return
					}
					c.timeout = timeout // short timeouts cut operations too
				}
				ctx, cancel := context.WithCancel(context.Background())
				delay := time.Duration(rng.IntN(30000)) * time.Microsecond
				timer := time.AfterFunc(delay, cancel)
				var err error
				switch rng.IntN(3) {
				case 0:
					seq := uint32(1 + rng.IntN(messages))
					var bi delivery.BodyInfo
					bi, err = c.FetchBody(ctx, seq)
					if err == nil && (bi.ID != fmt.Sprintf("big-%d", seq) || bi.Size < 256<<10) {
						t.Errorf("FetchBody(%d) = %+v", seq, bi)
					}
				case 1:
					var infos []delivery.MessageInfo
					infos, err = c.FetchRangeEnvelope(ctx, 1, 0)
					if err == nil && len(infos) != messages {
						t.Errorf("FetchRangeEnvelope: %d infos, want %d", len(infos), messages)
					}
				case 2:
					var infos []delivery.MessageInfo
					infos, err = c.UIDFetchRange(ctx, 1, 0)
					if err == nil && len(infos) != messages {
						t.Errorf("UIDFetchRange: %d infos, want %d", len(infos), messages)
					}
				}
				timer.Stop()
				cancel()
				mu.Lock()
				if err != nil {
					cut++
				} else {
					ok++
				}
				mu.Unlock()
				if err == nil {
					continue
				}
				if errors.Is(err, context.Canceled) {
					continue
				}
				switch cls := measure.Classify(err); cls {
				case measure.Timeout, measure.Connection:
				default:
					t.Errorf("cut fetch: class %v: %v", cls, err)
				}
			}
		}(uint64(s))
	}
	wg.Wait()
	t.Logf("%d operations completed, %d cut", ok, cut)
	if cut == 0 {
		t.Error("no operation was cut: the stress test exercised nothing")
	}
}
