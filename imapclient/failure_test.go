package imapclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/measure"
)

const (
	shortTimeout = 200 * time.Millisecond
	slack        = 800 * time.Millisecond
)

// selectOK answers SELECT with a one-message mailbox.
const selectOK = "* 1 EXISTS\r\n* OK [UIDVALIDITY 7] v\r\n* OK [UIDNEXT 2] n\r\n%[1]s OK [READ-WRITE] done\r\n"

// failingOp is one operation against a scripted server that misbehaves.
type failingOp struct {
	name   string
	fn     measure.Function
	script fakeScript
	run    func(c *Client) error
}

func failingOps(action fakeAction) []failingOp {
	// misbehave returns a script that answers verb with partial and then
	// applies action; everything else before it succeeds.
	misbehave := func(verb, partial string) fakeScript {
		return loginOK(func(cmd string) (string, fakeAction) {
			switch {
			case strings.HasPrefix(cmd, verb):
				return partial, action
			case strings.HasPrefix(cmd, "SELECT "):
				return selectOK, reply
			}
			return "%[1]s BAD unexpected\r\n", reply
		})
	}
	selectFirst := func(op func(c *Client) error) func(c *Client) error {
		return func(c *Client) error {
			if _, err := c.SelectInbox(context.Background()); err != nil {
				return errors.New("setup SELECT failed: " + err.Error())
			}
			return op(c)
		}
	}
	return []failingOp{
		{"select, no reply", measure.IMAPSelectInbox, misbehave("SELECT", ""), func(c *Client) error {
			_, err := c.SelectInbox(context.Background())
			return err
		}},
		{"select, mid-reply", measure.IMAPSelectFolder, misbehave("SELECT", "* 3 EXISTS\r\n* OK [UIDVAL"), func(c *Client) error {
			_, err := c.SelectFolder(context.Background(), "Archive")
			return err
		}},
		{"list, mid-reply", measure.IMAPList, misbehave("LIST", `* LIST () "/" INBOX`+"\r\n"), func(c *Client) error {
			_, err := c.List(context.Background())
			return err
		}},
		{"lsub, no reply", measure.IMAPLsub, misbehave("LSUB", ""), func(c *Client) error {
			_, err := c.Lsub(context.Background())
			return err
		}},
		{"lsub, mid-literal", measure.IMAPLsub, misbehave("LSUB", `* LSUB () "/" {10}`+"\r\nArc"), func(c *Client) error {
			_, err := c.Lsub(context.Background())
			return err
		}},
		{"fetch body, mid-literal", measure.IMAPFetchBody, misbehave("FETCH", "* 1 FETCH (BODY[] {1000}\r\nSubject: hi\r\n"), selectFirst(func(c *Client) error {
			_, err := c.FetchBody(context.Background(), 1)
			return err
		})},
		{"fetch range, no reply", measure.IMAPFetchRange, misbehave("FETCH", ""), selectFirst(func(c *Client) error {
			_, err := c.FetchRangeEnvelope(context.Background(), 1, 0)
			return err
		})},
		{"uid fetch, mid-reply", measure.IMAPUIDFetch, misbehave("UID FETCH", "* 1 FETCH (UID 1 FLAGS (\\Seen"), selectFirst(func(c *Client) error {
			_, err := c.UIDFetchRange(context.Background(), 1, 0)
			return err
		})},
		{"store, no reply", measure.IMAPStore, misbehave("STORE", ""), selectFirst(func(c *Client) error {
			return c.Store(context.Background(), 1)
		})},
		{"uid store, no reply", measure.IMAPUIDStore, misbehave("UID STORE", ""), selectFirst(func(c *Client) error {
			return c.UIDStore(context.Background(), 1)
		})},
		{"expunge, mid-reply", measure.IMAPExpunge, misbehave("EXPUNGE", "* 1 EXPUNGE\r\n"), selectFirst(func(c *Client) error {
			return c.Expunge(context.Background())
		})},
		{"append, no reply", measure.IMAPAppend, misbehave("APPEND", ""), func(c *Client) error {
			_, err := c.Append(context.Background(), "Sent", []byte("Subject: x\r\n\r\nbody\r\n"), []string{`\Seen`}, time.Now())
			return err
		}},
	}
}

// TestSilentServerTimesOut: a server that stops answering, at any point,
// costs at most Timeout (+slack), is classified Timeout, and leaves the
// client closed.
func TestSilentServerTimesOut(t *testing.T) {
	t.Parallel()
	t.Run("connect, silent before greeting", func(t *testing.T) {
		t.Parallel()
		fs := startFake(t, "", nil)
		checkConnectFails(t, fs.addr, measure.Timeout)
	})
	t.Run("connect, silent after greeting", func(t *testing.T) {
		t.Parallel()
		fs := startFake(t, fakeGreeting, func(string) (string, fakeAction) { return "", stall })
		checkConnectFails(t, fs.addr, measure.Timeout)
	})
	t.Run("connect, silent at STARTTLS", func(t *testing.T) {
		t.Parallel()
		fs := startFake(t, fakeGreeting, func(string) (string, fakeAction) { return "", stall })
		rec := &recorder{}
		start := time.Now()
		_, err := Connect(context.Background(), Config{Address: fs.addr, TLS: TLSStartTLS, Timeout: shortTimeout, Observer: rec}, testUser, testPassword)
		checkElapsed(t, start)
		checkClass(t, err, rec.last(t), measure.IMAPConnect, measure.Timeout)
	})
	for _, op := range failingOps(stall) {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			checkOpFails(t, op, measure.Timeout)
		})
	}
}

// TestServerHangUpIsConnectionError: a server that closes the connection
// mid-operation yields the Connection class.
func TestServerHangUpIsConnectionError(t *testing.T) {
	t.Parallel()
	t.Run("connect, hang up at LOGIN", func(t *testing.T) {
		t.Parallel()
		fs := startFake(t, fakeGreeting, func(string) (string, fakeAction) { return "", hangUp })
		checkConnectFails(t, fs.addr, measure.Connection)
	})
	t.Run("connect, refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		rec := &recorder{}
		_, err = Connect(context.Background(), Config{Address: addr, Timeout: shortTimeout, Observer: rec}, testUser, testPassword)
		checkClass(t, err, rec.last(t), measure.IMAPConnect, measure.Connection)
		if o := rec.last(t); o.Connect != nil {
			t.Errorf("refused connect has phases %+v, want none", o.Connect)
		}
	})
	for _, op := range failingOps(hangUp) {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			checkOpFails(t, op, measure.Connection)
		})
	}
}

func checkElapsed(t *testing.T, start time.Time) {
	t.Helper()
	if d := time.Since(start); d > shortTimeout+slack {
		t.Errorf("took %v, want ≤ %v", d, shortTimeout+slack)
	}
}

func checkConnectFails(t *testing.T, addr string, class measure.ErrorClass) {
	t.Helper()
	rec := &recorder{}
	start := time.Now()
	c, err := Connect(context.Background(), Config{Address: addr, Timeout: shortTimeout, Observer: rec}, testUser, testPassword)
	checkElapsed(t, start)
	if c != nil {
		t.Errorf("got a client with error %v", err)
	}
	o := rec.last(t)
	checkClass(t, err, o, measure.IMAPConnect, class)
	if o.Connect != nil && (o.Connect.TCP <= 0 || o.Connect.TLSUsed) {
		t.Errorf("phases of a failed plaintext connect %+v", o.Connect)
	}
	if err != nil && strings.Contains(err.Error(), testPassword) {
		t.Errorf("password in %v", err)
	}
}

func checkOpFails(t *testing.T, op failingOp, class measure.ErrorClass) {
	t.Helper()
	fs := startFake(t, fakeGreeting, op.script)
	rec := &recorder{}
	// Connect generously (the machine may be loaded), then tighten the deadline.
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 5 * time.Second, Observer: rec}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.timeout = shortTimeout
	start := time.Now()
	err = op.run(c)
	checkElapsed(t, start)
	checkClass(t, err, rec.last(t), op.fn, class)
	if class == measure.Timeout && !errors.Is(err, measure.ErrTimeout) {
		t.Errorf("%v does not wrap measure.ErrTimeout", err)
	}
	// The client is now unusable, and says so without I/O or observation.
	n := len(rec.All())
	if _, err := c.SelectInbox(context.Background()); !errors.Is(err, ErrClosed) || measure.Classify(err) != measure.Connection {
		t.Errorf("after failure: %v, want ErrClosed (connection class)", err)
	}
	if len(rec.All()) != n {
		t.Errorf("an operation on a closed client was observed")
	}
}

func TestContextCancelClosesPromptly(t *testing.T) {
	t.Parallel()
	fs := startFake(t, fakeGreeting, loginOK(func(string) (string, fakeAction) { return "", stall }))
	rec := &recorder{}
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 10 * time.Second, Observer: rec}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = c.SelectInbox(ctx)
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancelled SELECT took %v", d)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if o := rec.last(t); o.Function != measure.IMAPSelectInbox || !errors.Is(o.Err, context.Canceled) {
		t.Errorf("observation %+v", o)
	}
	// An already-cancelled context does nothing and observes nothing.
	n := len(rec.All())
	if _, err := Connect(ctx, Config{Address: fs.addr, Observer: rec}, testUser, testPassword); !errors.Is(err, context.Canceled) {
		t.Errorf("Connect with a done ctx: %v", err)
	}
	if len(rec.All()) != n {
		t.Errorf("Connect with a done ctx was observed")
	}
}

// TestLsubInterleaved: LSUB replies with literals, odd case and
// unilateral data in between; go-imap still gets the unilateral data, in
// the server's order (when the client's caller reads, with the next
// command's responses; with Idles, as they come), and the connection stays
// usable.
func TestLsubInterleaved(t *testing.T) {
	t.Parallel()
	for _, idles := range []bool{false, true} {
		t.Run(fmt.Sprintf("idles=%v", idles), func(t *testing.T) { testLsubInterleaved(t, idles) })
	}
}

func testLsubInterleaved(t *testing.T, idles bool) {
	var mu sync.Mutex
	lsubs := 0
	fs := startFake(t, fakeGreeting, loginOK(func(cmd string) (string, fakeAction) {
		switch {
		case cmd == `LSUB "" "*"`:
			mu.Lock()
			lsubs++
			mu.Unlock()
			return "* 4 EXISTS\r\n" +
				`* LSUB () "/" INBOX` + "\r\n" +
				`* lsub (\Noselect) "/" {13}` + "\r\nProjects/Alph\r\n" +
				"* 1 RECENT\r\n" +
				`* LSUB () NIL "Sent \"x\""` + "\r\n" +
				`* LSUB () "/" Entw&APw-rfe` + "\r\n" +
				"%[1]s OK LSUB completed\r\n", reply
		case strings.HasPrefix(cmd, "SELECT "):
			return selectOK, reply
		case cmd == "NOOP":
			return "* 5 EXISTS\r\n%[1]s OK noop\r\n", reply
		}
		return "%[1]s BAD unexpected\r\n", reply
	}))
	var existsMu sync.Mutex
	var exists []uint32
	u := &Unilateral{Exists: func(n uint32) { existsMu.Lock(); exists = append(exists, n); existsMu.Unlock() }}
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 2 * time.Second, Unilateral: u, Idles: idles}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SelectInbox(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		names, err := c.Lsub(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"INBOX", "Projects/Alph", `Sent "x"`, "Entwürfe"}; !slices.Equal(names, want) {
			t.Errorf("LSUB = %q, want %q", names, want)
		}
	}
	if err := c.lib.Noop().Wait(); err != nil {
		t.Fatalf("NOOP after LSUB: %v", err)
	}
	if mb := c.lib.Mailbox(); mb == nil || mb.NumMessages != 5 {
		t.Errorf("mailbox after NOOP %+v", mb)
	}
	existsMu.Lock()
	defer existsMu.Unlock()
	if want := []uint32{4, 4, 5}; !slices.Equal(exists, want) {
		t.Errorf("EXISTS seen by go-imap %v, want %v (both LSUBs', then NOOP's)", exists, want)
	}
	var tags []string
	for _, cmd := range fs.seen() {
		tags = append(tags, cmd)
	}
	if mu.Lock(); lsubs != 2 {
		t.Errorf("server saw %d LSUB commands, want 2 (%q)", lsubs, tags)
	}
	mu.Unlock()
}

func TestLsubNO(t *testing.T) {
	t.Parallel()
	fs := startFake(t, fakeGreeting, loginOK(func(cmd string) (string, fakeAction) {
		return "%[1]s NO [CANNOT] not today\r\n", reply
	}))
	rec := &recorder{}
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 2 * time.Second, Observer: rec}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Lsub(context.Background())
	checkClass(t, err, rec.last(t), measure.IMAPLsub, measure.Protocol)
	// Still usable.
	if _, err := c.SelectFolder(context.Background(), "x"); measure.Classify(err) != measure.Protocol {
		t.Errorf("after LSUB NO, SELECT gave %v, want a NO", err)
	}
}

// TestWatchdogExactTimeout checks, in fake time, that a silent server costs
// exactly Timeout and that the observation says so.
//
// The idle time before the silent SELECT is longer than the timeout (the
// watchdog's timer has fired and stood down) or shorter, after a NOOP (the
// timer, armed for the NOOP, fires during the SELECT and must re-arm for
// the SELECT's own deadline rather than end it early).
func TestWatchdogExactTimeout(t *testing.T) {
	for _, tc := range []struct {
		silentAt string
		idle     time.Duration
		noop     bool
	}{
		{"greeting", 0, false},
		{"SELECT", time.Minute, false},
		{"SELECT", 5 * time.Second, true},
		{"SELECT", 0, true},
	} {
		silentAt := tc.silentAt
		t.Run(fmt.Sprintf("%s/idle=%v/noop=%v", silentAt, tc.idle, tc.noop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const timeout = 7 * time.Second
				rec := &recorder{}
				var wg sync.WaitGroup
				cfg := Config{Address: "pipe:143", Timeout: timeout, Observer: rec,
					DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
						client, server := net.Pipe()
						wg.Add(1)
						go func() {
							defer wg.Done()
							defer server.Close()
							pipeServer(server, silentAt)
						}()
						return client, nil
					}}
				c, err := Connect(context.Background(), cfg, testUser, testPassword)
				if silentAt == "greeting" {
					o := rec.last(t)
					if err == nil || o.Class != measure.Timeout || o.Duration != timeout {
						t.Errorf("Connect: %v, observation %+v; want Timeout after exactly %v", err, o, timeout)
					}
					wg.Wait()
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if o := rec.last(t); o.Duration != 0 {
					t.Errorf("Connect over a pipe took %v of fake time, want 0", o.Duration)
				}
				if tc.noop {
					if err := c.Noop(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(tc.idle) // idle time between operations must not count
				_, err = c.SelectInbox(context.Background())
				o := rec.last(t)
				if !errors.Is(err, measure.ErrTimeout) || o.Function != measure.IMAPSelectInbox || o.Duration != timeout {
					t.Errorf("SELECT: %v, observation %+v; want Timeout after exactly %v", err, o, timeout)
				}
				c.Close()
				wg.Wait()
			})
		})
	}
}

// pipeServer greets (unless silentAt is "greeting"), accepts LOGIN, and
// goes silent at the command named silentAt.
func pipeServer(conn net.Conn, silentAt string) {
	buf := make([]byte, 4096)
	if silentAt == "greeting" {
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}
	conn.Write([]byte("* OK [CAPABILITY IMAP4rev1] pipe\r\n"))
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return
		}
		tag, cmd, _ := strings.Cut(strings.TrimSpace(string(buf[:n])), " ")
		if strings.HasPrefix(cmd, silentAt) {
			continue
		}
		conn.Write([]byte(tag + " OK [CAPABILITY IMAP4rev1] ok\r\n"))
	}
}

// TestWatchdogReuse: the watchdog guard reuses across commands still
// cancels on the context of a later command, also when it is the same
// context as before, and a context that ended after its command never
// cancels a later command on another context.
func TestWatchdogReuse(t *testing.T) {
	t.Parallel()
	fs := startFake(t, fakeGreeting, loginOK(func(cmd string) (string, fakeAction) {
		if cmd == "NOOP" {
			return "%[1]s OK done\r\n", reply
		}
		return "", stall
	}))
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 10 * time.Second}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 20; i++ { // contexts that end right after their command
		ctx, cancel := context.WithCancel(context.Background())
		if err := c.Noop(ctx); err != nil {
			t.Fatalf("NOOP %d: %v", i, err)
		}
		cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	for i := 0; i < 5; i++ {
		if err := c.Noop(ctx); err != nil {
			t.Fatalf("NOOP %d on a session context: %v", i, err)
		}
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = c.SelectInbox(ctx)
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancelled SELECT took %v", d)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// TestLsubFloodBounded: a server that answers LSUB with an endless stream
// of other responses (never the LSUB's own completion) costs the LSUB an
// error once what waits for go-imap passes maxTappedResponse; the
// generator does not hold the flood. Without Idles the LSUB's responses
// are read by the LSUB itself and the others kept for go-imap: that store
// is what is bounded here.
func TestLsubFloodBounded(t *testing.T) {
	t.Parallel()
	flood := strings.Repeat("* 1 RECENT\r\n", (2*maxTappedResponse)/len("* 1 RECENT\r\n"))
	fs := startFake(t, fakeGreeting, loginOK(func(cmd string) (string, fakeAction) {
		if cmd == `LSUB "" "*"` {
			return flood + `* LSUB () "/" INBOX` + "\r\n" + flood, reply
		}
		return "%[1]s OK\r\n", reply
	}))
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 5 * time.Second}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Lsub(context.Background())
	if err == nil || !strings.Contains(err.Error(), errResponseTooLong.Error()) {
		t.Fatalf("LSUB under a flood: %v, want %q", err, errResponseTooLong)
	}
	c.tr.mu.Lock()
	held := len(c.tr.out)
	c.tr.mu.Unlock()
	if held > maxTappedResponse+4096 {
		t.Errorf("%d bytes held for go-imap, bound %d", held, maxTappedResponse)
	}
}
