package soak

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// live is the memory the process holds for live data: the heap after two
// collections, plus goroutine stacks.
func live() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

func users(n int) []workload.User {
	us := make([]workload.User, n)
	for i := range us {
		us[i] = workload.User{Login: fmt.Sprintf("user%d", i+1), Password: "pw", Address: fmt.Sprintf("user%d@example.test", i+1)}
	}
	return us
}

// TestHelperTarget is not a test: run by TestMemoryConstants as a child
// process (MAILBENCH_MEM_CHILD=users,messages,size,folders,tls), it starts
// an embedded target, prints "populated <live before> <live after> <imap>
// <smtp>", then prints live() for every line it reads on stdin.
func TestHelperTarget(t *testing.T) {
	spec := os.Getenv("MAILBENCH_MEM_CHILD")
	if spec == "" {
		t.Skip("a child process of TestMemoryConstants")
	}
	var nUsers, nMsgs, size, nFolders, useTLS int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d,%d,%d", &nUsers, &nMsgs, &size, &nFolders, &useTLS); err != nil {
		t.Fatal(err)
	}
	gen, err := message.NewGenerator(1, []int{max(size, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for i := range nFolders {
		folders = append(folders, fmt.Sprintf("F%d", i))
	}
	opts := demo.Options{Users: users(nUsers), Folders: folders}
	if nMsgs > 0 {
		opts.Populate = func(u workload.User, mb string, add func([]byte, time.Time) error) error {
			if mb != "INBOX" {
				return nil
			}
			for i := range nMsgs {
				env := message.Envelope{ID: fmt.Sprintf("m%d-%s", i, u.Login), From: "a@remote.test", To: []string{u.Address}, Subject: "s", Sent: time.Now()}
				if err := add(gen.Message(env, size, uint64(i)), time.Now()); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if useTLS == 1 {
		if opts.TLSConfig, _, err = tlsconf.EmbeddedTLS(); err != nil {
			t.Fatal(err)
		}
	}
	before := live()
	tg, err := demo.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	fmt.Printf("populated %d %d %s %s\n", before, live(), tg.IMAPAddr(), tg.SMTPAddr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Printf("live %d\n", live())
	}
}

type child struct {
	cmd        *exec.Cmd
	in         io.WriteCloser
	out        *bufio.Reader
	before     int64
	after      int64
	imap, smtp string
}

func startChild(t testing.TB, spec string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTarget$")
	cmd.Env = append(os.Environ(), "MAILBENCH_MEM_CHILD="+spec)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(outp)}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("child %s: %v", spec, err)
	}
	if _, err := fmt.Sscanf(line, "populated %d %d %s %s", &c.before, &c.after, &c.imap, &c.smtp); err != nil {
		t.Fatalf("child %s: %q: %v", spec, line, err)
	}
	return c
}

func (c *child) live(t testing.TB) int64 {
	t.Helper()
	fmt.Fprintln(c.in)
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "live ")), 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return n
}

// TestMemoryConstants measures the constants of workload's memory
// estimate (workload/budget.go) and prints them. It takes about half a
// minute; run it with
//
//	MAILBENCH_MEASURE=1 go test -run MemoryConstants -v ./bench/soak
func TestMemoryConstants(t *testing.T) {
	if os.Getenv("MAILBENCH_MEASURE") == "" {
		t.Skip("set MAILBENCH_MEASURE=1 to measure the memory estimate's constants")
	}
	const nUsers = 200

	// The embedded target: per user (4 standard mailboxes), per extra
	// folder, per message as a function of its size.
	c := startChild(t, fmt.Sprintf("%d,0,0,0,0", nUsers))
	perUser := float64(c.after-c.before) / nUsers
	c = startChild(t, fmt.Sprintf("%d,0,0,10,0", nUsers))
	perFolder := (float64(c.after-c.before)/nUsers - perUser) / 10
	t.Logf("embedded target: %.0f B per user (INBOX, Sent, Drafts, Trash), %.0f B per further folder", perUser, perFolder)
	const nMsgs = 50
	for _, size := range []int{1 << 10, 4 << 10, 16 << 10, 64 << 10} {
		c := startChild(t, fmt.Sprintf("%d,%d,%d,0,0", nUsers, nMsgs, size))
		per := (float64(c.after-c.before)/nUsers - perUser) / nMsgs
		t.Logf("embedded target: message of %6d B holds %8.0f B (%.2f× + %.0f B)", size, per, per/float64(size), per-float64(size))
	}

	// Sessions: the client side measured here, the server side in the child.
	const k = 300
	for _, useTLS := range []bool{false, true} {
		c := startChild(t, fmt.Sprintf("%d,20,4096,0,%d", k, map[bool]int{false: 0, true: 1}[useTLS]))
		icfg := imapclient.Config{Address: c.imap, Timeout: 10 * time.Second}
		scfg := smtpclient.Config{Address: c.smtp, Timeout: 10 * time.Second}
		if useTLS {
			icfg.TLS, icfg.TLSConfig = imapclient.TLSMode("starttls"), &tls.Config{InsecureSkipVerify: true}
			scfg.TLS, scfg.TLSConfig = smtpclient.TLSMode("starttls"), &tls.Config{InsecureSkipVerify: true}
		}
		ctx := context.Background()
		srv0, cli0 := c.live(t), live()
		var ics []*imapclient.Client
		for i := range k {
			ic, err := imapclient.Connect(ctx, icfg, fmt.Sprintf("user%d", i+1), "pw")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ic.SelectInbox(ctx); err != nil {
				t.Fatal(err)
			}
			ics = append(ics, ic)
		}
		srv1, cli1 := c.live(t), live()
		for _, ic := range ics {
			ic.Close()
		}
		time.Sleep(200 * time.Millisecond)
		srv2, cli2 := c.live(t), live()
		var scs []*smtpclient.Client
		for range k {
			sc, err := smtpclient.Connect(ctx, scfg)
			if err != nil {
				t.Fatal(err)
			}
			scs = append(scs, sc)
		}
		srv3, cli3 := c.live(t), live()
		for _, sc := range scs {
			sc.Quit(ctx)
		}
		t.Logf("tls=%v: IMAP session (logged in, INBOX selected): client %.0f B, embedded server %.0f B", useTLS,
			float64(cli1-cli0)/k, float64(srv1-srv0)/k)
		t.Logf("tls=%v: SMTP session (connected, EHLO done): client %.0f B, embedded server %.0f B", useTLS,
			float64(cli3-cli2)/k, float64(srv3-srv2)/k)
	}

	// The ledger's per-user index (its per-message cost is measured by
	// ledger's BenchmarkLedgerAccepted), and the users themselves.
	const nu = 100_000
	addrs := make([]string, nu)
	us := users(nu)
	for i := range addrs {
		addrs[i] = us[i].Address
	}
	l0 := live()
	led := delivery.NewLedger(1, addrs, nil)
	l1 := live()
	runtime.KeepAlive(led)
	us2 := users(nu)
	l2 := live()
	runtime.KeepAlive(us2)
	t.Logf("ledger: %.0f B per user; workload.User: %.0f B per user", float64(l1-l0)/nu, float64(l2-l1)/nu)
}
