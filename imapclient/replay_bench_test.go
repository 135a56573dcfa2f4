package imapclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// The replay benchmark measures the client's own CPU per session with no
// server and no system call: a connection that answers every command at
// once with the response Dovecot 2.3.19 gave to the same command
// (testdata/dovecot-session.replay, recorded from scripts/sut with the
// commands of bench/imapcost's session). Where the other cost benchmarks
// (a real socket, a server in another process) say what a session costs,
// this one isolates the part of it that is parsing, allocation and
// mailbench's own bookkeeping, steady enough on a shared machine to A/B a
// change of a few percent (docs/performance.md, "Issue 37, third round").

// replayScript is a recorded session: the greeting, then the response to
// each command, by command name; "TAG " at the start of a response's last
// line stands for the command's tag.
type replayScript map[string][]byte

func loadReplay(tb testing.TB, path string) replayScript {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	s := replayScript{}
	for len(b) > 0 {
		// "== NAME LENGTH\n" then LENGTH bytes.
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 || !bytes.HasPrefix(b, []byte("== ")) {
			tb.Fatalf("%s: bad record header %.40q", path, b)
		}
		head := string(b[3:nl])
		sp := bytes.LastIndexByte([]byte(head), ' ')
		n, err := strconv.Atoi(head[sp+1:])
		if sp < 0 || err != nil || nl+1+n > len(b) {
			tb.Fatalf("%s: bad record header %q", path, head)
		}
		s[head[:sp]] = b[nl+1 : nl+1+n]
		b = b[nl+1+n:]
	}
	return s
}

// replayConn is a net.Conn that answers each complete command written to
// it with the script's response, tagged. A read with nothing to answer is
// an error: the client read before it wrote, which a real server would
// leave waiting.
type replayConn struct {
	script  replayScript
	out     bytes.Buffer // responses not yet read
	in      []byte       // a command not yet complete
	literal int          // bytes of a literal still to come
	closed  bool
	reads   int // Read calls
}

func newReplayConn(s replayScript) *replayConn {
	c := &replayConn{script: s}
	c.out.Write(s["GREETING"])
	return c
}

var errReplayIdle = errors.New("replay: read with no response pending")

func (c *replayConn) Read(p []byte) (int, error) {
	c.reads++
	if c.closed {
		return 0, net.ErrClosed
	}
	if c.out.Len() == 0 {
		return 0, errReplayIdle
	}
	return c.out.Read(p)
}

func (c *replayConn) Write(p []byte) (int, error) {
	if c.closed {
		return 0, net.ErrClosed
	}
	n := len(p)
	for len(p) > 0 {
		if c.literal > 0 {
			k := min(c.literal, len(p))
			c.literal -= k
			p = p[k:]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.in = append(c.in, p...)
			break
		}
		c.in = append(c.in, p[:i+1]...)
		p = p[i+1:]
		line := c.in
		// A LITERAL+ literal ("{N+}\r\n") continues the command.
		if j := bytes.LastIndexByte(line, '{'); j >= 0 && bytes.HasSuffix(line, []byte("+}\r\n")) {
			if size, err := strconv.Atoi(string(line[j+1 : len(line)-4])); err == nil {
				c.literal = size
				continue
			}
		}
		if err := c.answer(line); err != nil {
			return 0, err
		}
		c.in = c.in[:0]
	}
	return n, nil
}

// answer queues the response to the command that starts with line (its
// first line: tag, name, arguments).
func (c *replayConn) answer(line []byte) error {
	fields := bytes.Fields(line)
	if len(fields) < 2 {
		return fmt.Errorf("replay: no command in %q", line)
	}
	name := string(bytes.ToUpper(fields[1]))
	if name == "FETCH" && bytes.Contains(line, []byte("BODY[]")) {
		name = "FETCH BODY"
	}
	resp, ok := c.script[name]
	if !ok {
		return fmt.Errorf("replay: no response recorded for %s", name)
	}
	last := bytes.LastIndex(resp, []byte("\r\nTAG "))
	if last < 0 && bytes.HasPrefix(resp, []byte("TAG ")) {
		last = -2 // the tagged line alone
	}
	if last == -1 {
		return fmt.Errorf("replay: %s's response has no tagged line", name)
	}
	c.out.Write(resp[:last+2])
	c.out.Write(fields[0])
	c.out.Write(resp[last+5:])
	return nil
}

func (c *replayConn) Close() error { c.closed = true; return nil }
func (c *replayConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (c *replayConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1143}
}
func (c *replayConn) SetDeadline(t time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(t time.Time) error { return nil }

// replaySession runs bench/imapcost's session: LOGIN, LIST, SELECT, FETCH
// of the last 20 messages' envelopes and headers, FETCH of one body, STORE,
// EXPUNGE, APPEND, LOGOUT.
func replaySession(ctx context.Context, cfg Config, msg []byte) error {
	c, err := Connect(ctx, cfg, "user1", "replay-secret")
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.List(ctx); err != nil {
		return err
	}
	mb, err := c.SelectInbox(ctx)
	if err != nil {
		return err
	}
	infos, err := c.FetchRangeEnvelope(ctx, mb.Messages-19, mb.Messages)
	if err != nil {
		return err
	}
	if len(infos) != 20 {
		return fmt.Errorf("FETCH: %d messages, want 20", len(infos))
	}
	if _, err := c.FetchBody(ctx, mb.Messages); err != nil {
		return err
	}
	if err := c.Store(ctx, 1); err != nil {
		return err
	}
	if err := c.Expunge(ctx); err != nil {
		return err
	}
	if _, err := c.Append(ctx, "INBOX", msg, nil, time.Time{}); err != nil {
		return err
	}
	return c.Logout(ctx)
}

func replayConfig(s replayScript, conns *[]*replayConn) Config {
	return Config{
		Address:  "127.0.0.1:1143",
		Timeout:  30 * time.Second,
		Observer: measure.Discard,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			c := newReplayConn(s)
			if conns != nil {
				*conns = append(*conns, c)
			}
			return c, nil
		},
	}
}

// TestReplaySession checks the replay itself (the recorded session runs
// through the client) and the session's reads: with the whole of each
// response waiting, about one read per response (the greeting and nine),
// the FETCH of 20 messages' envelopes and headers (14 KiB) included: 11
// with the session's 16 KiB buffer, 15 with bufio's default 4 KiB.
func TestReplaySession(t *testing.T) {
	s := loadReplay(t, "testdata/dovecot-session.replay")
	var conns []*replayConn
	if err := replaySession(context.Background(), replayConfig(s, &conns), []byte("Subject: x\r\n\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	if len(conns) != 1 || conns[0].reads > 11 {
		t.Errorf("%d connections, reads %v: want one connection read at most 11 times", len(conns), conns[0].reads)
	}
	c := newReplayConn(s)
	if _, err := io.ReadAll(io.LimitReader(c, 1<<20)); !errors.Is(err, errReplayIdle) {
		t.Fatalf("reading past the greeting: %v, want %v", err, errReplayIdle)
	}
	if _, err := c.Write([]byte("T1 NOOP\r\n")); err == nil {
		t.Fatal("a command with no recorded response was answered")
	}
}

func BenchmarkIMAPReplaySession(b *testing.B) {
	s := loadReplay(b, "testdata/dovecot-session.replay")
	cfg := replayConfig(s, nil)
	msg := bytes.Repeat([]byte("x"), 4000)
	msg = append([]byte("Subject: replay\r\n\r\n"), msg...)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := replaySession(ctx, cfg, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSessionBuffersPooled: a session's client gives go-imap's read and
// write buffers back at Close (goimap.Options.PoolBuffers, buffer-pool.patch),
// so that the next session takes them instead of allocating 20 KiB again.
// Recorded sessions, pooled and not, alternate; a pooled session must
// allocate at least half the read buffer's 16 KiB less (bytes, not time:
// the same on any machine). Pooled, it saves the 20 KiB of both buffers;
// under the race detector sync.Pool drops a quarter of what it is given
// back, and the saving is some 15 KiB.
func TestSessionBuffersPooled(t *testing.T) {
	s := loadReplay(t, "testdata/dovecot-session.replay")
	cfg := replayConfig(s, nil)
	msg := append([]byte("Subject: replay\r\n\r\n"), bytes.Repeat([]byte("x"), 4000)...)
	ctx := context.Background()
	defer func(v bool) { poolBuffers = v }(poolBuffers)
	perSession := func(pooled bool) float64 {
		poolBuffers = pooled
		const n = 40
		if err := replaySession(ctx, cfg, msg); err != nil { // the pool's first buffers
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			if err := replaySession(ctx, cfg, msg); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	var pooled, unpooled []float64
	for range 3 {
		unpooled = append(unpooled, perSession(false))
		pooled = append(pooled, perSession(true))
	}
	slices.Sort(pooled)
	slices.Sort(unpooled)
	if saved := unpooled[1] - pooled[1]; saved < sessionReadBufferSize/2 {
		t.Errorf("a pooled session allocated %.0f bytes, an unpooled one %.0f (medians of 3 runs of 40): want at least %d less", pooled[1], unpooled[1], sessionReadBufferSize/2)
	}
}
