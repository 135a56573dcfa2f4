package imapclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	embedded "github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// The benchmarks of this file measure the generator alone: the embedded
// target runs in a child process (this test binary re-executed as
// TestHelperTargetProcess), so this process's CPU time (getrusage) and
// memory are the client's. See docs/performance.md, "IMAP generator cost".

const (
	helperEnv      = "MAILBENCH_BENCH_TARGET" // "plain" or "tls": run as the target process
	helperUsers    = 10
	helperPassword = "bench-secret"
)

// TestHelperTargetProcess is not a test: when helperEnv is set it serves
// the embedded target (users user1..user10, INBOX of 50 × 4 KiB) on
// 127.0.0.1, implicit TLS when helperEnv is "tls", prints the IMAP address
// and serves until its standard input closes.
func TestHelperTargetProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for the cost benchmarks")
	}
	gen, err := message.NewGenerator(1, []int{4 << 10})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var users []workload.User
	for i := range helperUsers {
		users = append(users, workload.User{Login: fmt.Sprintf("user%d", i+1), Password: helperPassword})
	}
	populate := func(u workload.User, mailbox string, add func([]byte, time.Time) error) error {
		if mailbox != "INBOX" {
			return nil
		}
		t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		for i := range benchInboxSize {
			env := message.Envelope{
				ID: delivery.NewID(1, uint64(i+1)), From: "user2@example.test", To: []string{u.Login + "@example.test"},
				Subject: fmt.Sprintf("message %d", i+1), Sent: t0.Add(time.Duration(i) * time.Minute),
			}
			if err := add(gen.Message(env, 4<<10, uint64(i)), env.Sent); err != nil {
				return err
			}
		}
		return nil
	}
	opts := embedded.Options{Users: users, Populate: populate}
	if mode == "tls" {
		srv, _, err := tlsconf.SelfSignedTLS()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		opts.TLSConfig, opts.IMAPImplicitTLS = srv, true
	}
	tg, err := embedded.Start(context.Background(), opts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(tg.IMAPAddr())
	io.Copy(io.Discard, os.Stdin)
	tg.Close()
	os.Exit(0)
}

// helperTarget is a running target process.
type helperTarget struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

var (
	helperMu      sync.Mutex
	helperTargets = map[string]*helperTarget{}
)

// targetProcess starts (once per mode and test binary) the target process
// and returns its IMAP address. It is left running until the binary exits
// (its standard input closes then).
func targetProcess(b *testing.B, mode string) string {
	helperMu.Lock()
	defer helperMu.Unlock()
	if h := helperTargets[mode]; h != nil {
		return h.addr
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTargetProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	line = strings.TrimSpace(line)
	if err != nil || strings.HasPrefix(line, "error") || line == "" {
		cmd.Process.Kill()
		b.Fatalf("target process: %q, %v", line, err)
	}
	helperTargets[mode] = &helperTarget{addr: line, cmd: cmd, stdin: stdin}
	return line
}

func benchConfig(b *testing.B, mode string) Config {
	cfg := Config{Address: targetProcess(b, mode), Timeout: 10 * time.Second, Observer: measure.Discard}
	if mode == "tls" {
		cfg.TLS, cfg.TLSConfig = TLSImplicit, &tls.Config{InsecureSkipVerify: true}
	}
	return cfg
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIMAPCommand measures one IMAP command of each type against the
// embedded target in its own process, one session. cpu-µs/op is this
// process's CPU time per command (the generator's share only); ns/op is
// the wall time, server included; B/op and allocs/op are the client's.
// "check" is the check session of BenchmarkIMAPCheckSession (LOGIN,
// SELECT, FETCH of 20, LOGOUT) per op.
func BenchmarkIMAPCommand(b *testing.B) {
	cfg := benchConfig(b, "plain")
	ctx := context.Background()
	for _, typ := range []string{"connect", "select", "fetch_range", "uid_fetch", "fetch_body", "list", "lsub", "store", "check"} {
		b.Run(typ, func(b *testing.B) {
			c, err := Connect(ctx, cfg, "user1", helperPassword)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Logout(ctx)
			mb, err := c.SelectInbox(ctx)
			if err != nil || mb.Messages < 20 {
				b.Fatalf("SELECT = %+v, %v", mb, err)
			}
			b.ReportAllocs()
			runtime.GC()
			cpu0 := processCPU()
			for b.Loop() {
				var err error
				switch typ {
				case "connect":
					var c2 *Client
					if c2, err = Connect(ctx, cfg, "user2", helperPassword); err == nil {
						c2.Close()
					}
				case "select":
					_, err = c.SelectInbox(ctx)
				case "fetch_range":
					var infos []delivery.MessageInfo
					if infos, err = c.FetchRangeEnvelope(ctx, mb.Messages-19, mb.Messages); err == nil && len(infos) != 20 {
						err = fmt.Errorf("%d messages", len(infos))
					}
				case "uid_fetch":
					var infos []delivery.MessageInfo
					if infos, err = c.UIDFetchRange(ctx, mb.UIDNext-20, 0); err == nil && len(infos) != 20 {
						err = fmt.Errorf("%d messages", len(infos))
					}
				case "fetch_body":
					var bi delivery.BodyInfo
					if bi, err = c.FetchBody(ctx, mb.Messages); err == nil && bi.ID == "" {
						err = fmt.Errorf("no %s in BODY[]", HeaderID)
					}
				case "list":
					_, err = c.List(ctx)
				case "lsub":
					_, err = c.Lsub(ctx)
				case "store":
					err = c.Store(ctx, 1) // \Deleted on message 1, never expunged
				case "check":
					err = checkSession(ctx, cfg)
				}
				if err != nil {
					b.Fatalf("%s: %v", typ, err)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

func checkSession(ctx context.Context, cfg Config) error {
	c, err := Connect(ctx, cfg, "user3", helperPassword)
	if err != nil {
		return err
	}
	mb, err := c.SelectInbox(ctx)
	if err != nil {
		c.Close()
		return err
	}
	if _, err := c.FetchRangeEnvelope(ctx, mb.Messages-19, mb.Messages); err != nil {
		c.Close()
		return err
	}
	return c.Logout(ctx)
}

// idleSessions is how many sessions BenchmarkIMAPIdleSession holds open.
const idleSessions = 200

// BenchmarkIMAPIdleSession measures the memory of a logged-in idle session
// (INBOX selected) against the embedded target in its own process: each
// op opens idleSessions sessions, and the growth of this process's heap
// (HeapAlloc after GC) and goroutine stacks (StackInuse) is divided by
// idleSessions. Reported as B/session (heap + stacks), heap-B/session and
// stack-B/session; ns/op is meaningless.
func BenchmarkIMAPIdleSession(b *testing.B) {
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			cfg := benchConfig(b, mode)
			ctx := context.Background()
			var heap, stack float64
			for b.Loop() {
				h0, s0 := memNow()
				clients := make([]*Client, 0, idleSessions)
				for i := range idleSessions {
					c, err := Connect(ctx, cfg, fmt.Sprintf("user%d", i%helperUsers+1), helperPassword)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := c.SelectInbox(ctx); err != nil {
						b.Fatal(err)
					}
					clients = append(clients, c)
				}
				time.Sleep(10 * time.Millisecond) // let the reader goroutines park
				h1, s1 := memNow()
				heap = float64(int64(h1)-int64(h0)) / idleSessions
				stack = float64(int64(s1)-int64(s0)) / idleSessions
				for _, c := range clients {
					c.Close()
				}
				runtime.KeepAlive(clients)
			}
			b.ReportMetric(heap+stack, "B/session")
			b.ReportMetric(heap, "heap-B/session")
			b.ReportMetric(stack, "stack-B/session")
		})
	}
}

func memNow() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}
