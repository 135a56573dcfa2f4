package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// netnsEnv, when "1", turns a machine where the namespace test cannot run
// into a failure (CI).
const netnsEnv = "MAILBENCH_REQUIRE_NETNS"

// The namespaces' network: one bridge in a hub namespace, one veth into
// each host namespace. Nothing of it is reachable from the machine's own
// namespace, and nothing of the machine's from it.
const (
	netnsPrefix  = "10.231.77."
	managerIP    = netnsPrefix + "1"
	sutIP        = netnsPrefix + "2"
	generatorIP0 = 11 // generators at .11, .12, .13
)

// netHost is one network namespace of the test.
type netHost struct {
	ns, ip string
}

// netTopology makes the hub and the host namespaces; cleanup removes them.
func netTopology(t *testing.T, tag string, hosts []netHost) {
	t.Helper()
	hub := "mbt-" + tag + "-hub"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	made := []string{}
	t.Cleanup(func() {
		for _, ns := range made {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	run("netns", "add", hub)
	made = append(made, hub)
	run("-n", hub, "link", "add", "br0", "type", "bridge")
	run("-n", hub, "link", "set", "br0", "up")
	for i, h := range hosts {
		run("netns", "add", h.ns)
		made = append(made, h.ns)
		in, out := fmt.Sprintf("mbt%s%d", tag, i), fmt.Sprintf("mbt%s%dp", tag, i)
		run("link", "add", in, "type", "veth", "peer", "name", out)
		run("link", "set", in, "netns", h.ns)
		run("link", "set", out, "netns", hub)
		run("-n", hub, "link", "set", out, "master", "br0", "up")
		run("-n", h.ns, "addr", "add", h.ip+"/24", "dev", in)
		run("-n", h.ns, "link", "set", in, "up")
		run("-n", h.ns, "link", "set", "lo", "up")
	}
}

// netnsUnavailable skips the test, or fails it under MAILBENCH_REQUIRE_NETNS=1.
func netnsUnavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(netnsEnv) == "1" {
		t.Fatalf("%s [%s=1]", why, netnsEnv)
	}
	t.Skip(why + " (the test needs root, Linux and iproute2's ip to make network namespaces)")
}

// TestManagedRunAcrossNamespaces runs a managed run across separate network
// hosts: the manager and its sink, three generators and the server under
// test (the project's Dovecot + Postfix, a second instance started inside
// its namespace by scripts/sut/up) each in a network namespace of its own,
// with its own address on one bridge, made by the test and removed after.
// It compares the manager's merged report with the single-machine run of
// the same seed against the same server (its mailboxes reset with clean and
// init in between): sessions by type, operations per function (within a
// few: which steps fall inside the window is the server's race) and
// deliveries must be equal, none lost.
func TestManagedRunAcrossNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of half a minute against a second Dovecot+Postfix")
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		netnsUnavailable(t, "not root on Linux")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		netnsUnavailable(t, "no ip command")
	}
	// The packages come from the machine's own scripts/sut/up (the
	// namespaces have no route to a package mirror).
	for _, p := range []string{"dovecot-imapd", "dovecot-lmtpd", "postfix"} {
		if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output(); err != nil || !strings.HasPrefix(string(out), "install ok installed") {
			unavailable(t, p+" is not installed: run scripts/sut/up first")
		}
	}
	tag := fmt.Sprintf("%04x", os.Getpid()&0xffff)
	probe := "mbt-" + tag + "-probe"
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		netnsUnavailable(t, fmt.Sprintf("cannot create a network namespace: %v: %s", err, bytes.TrimSpace(out)))
	}
	_ = exec.Command("ip", "netns", "del", probe).Run()

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "mailbench")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/mailbench").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	mgr := netHost{"mbt-" + tag + "-mgr", managerIP}
	sut := netHost{"mbt-" + tag + "-sut", sutIP}
	gens := []netHost{}
	for i := range 3 {
		gens = append(gens, netHost{fmt.Sprintf("mbt-%s-gen%d", tag, i), fmt.Sprintf("%s%d", netnsPrefix, generatorIP0+i)})
	}
	netTopology(t, tag, append([]netHost{mgr, sut}, gens...))

	// The server under test in its namespace, with its own state dir.
	sutDir := "/var/lib/mailbench-sut-" + tag
	sutEnv := []string{"MAILBENCH_SUT_DIR=" + sutDir, "MAILBENCH_SUT_HOST=" + sutIP,
		"MAILBENCH_SUT_NETWORKS=" + netnsPrefix + "0/24 127.0.0.0/8"}
	inNS := func(ns string, env []string, name string, args ...string) *exec.Cmd {
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns, "env"}, append(env, append([]string{name}, args...)...)...)...)
		cmd.Dir = root
		return cmd
	}
	t.Cleanup(func() {
		if out, err := inNS(sut.ns, sutEnv, "bash", "scripts/sut/down").CombinedOutput(); err != nil {
			t.Logf("scripts/sut/down: %v: %s", err, out)
		}
		_ = os.RemoveAll(sutDir)
	})
	if out, err := inNS(sut.ns, sutEnv, "bash", "scripts/sut/up", "-n", "30", "--sink", managerIP+":2526").CombinedOutput(); err != nil {
		t.Fatalf("scripts/sut/up in %s: %v\n%s", sut.ns, err, out)
	}

	cfgFile := filepath.Join(dir, "netns.toml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf(`name = "netns"
seed = 7
[target.imap]
address = "%[1]s:1143"
auth = "login"
[target.smtp]
address = "%[1]s:2525"
[sink]
listen = "%[2]s:2526"
[users]
count = 30
password = "mailbench"
[load]
sessions_per_hour = 10800
op_timeout = "10s"
think_time = "50ms"
inbound_per_session = 0.5
[phases]
warmup = "3s"
measurement = "20s"
rampdown = "15s"
settle = "5s"
[mailboxes]
inbox_messages = 5
folder_messages_min = 1
folder_messages_max = 2
`, sutIP, managerIP)), 0o600); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("netns-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"MAILBENCH_PASSWORD=", "HOME=" + dir}
	mb := func(ns string, args ...string) *exec.Cmd { return inNS(ns, env, bin, args...) }
	must := func(cmd *exec.Cmd, what string) string {
		t.Helper()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		return string(out)
	}
	reset := func() {
		must(mb(gens[0].ns, "clean", cfgFile), "clean")
		must(mb(gens[0].ns, "init", cfgFile), "init")
	}

	// The single-machine run, from the manager's host (where the SUT
	// relays to).
	reset()
	singleJSON := filepath.Join(dir, "single.json")
	single := mb(mgr.ns, "run", cfgFile, "--json", singleJSON, "-q", "--no-verdict-exit")
	if out, err := single.CombinedOutput(); err != nil {
		t.Fatalf("single run: %v\n%s", err, out)
	}

	// The managed run: the manager and its sink on one host, the three
	// generators on theirs.
	reset()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mergedJSON := filepath.Join(dir, "merged.json")
	var wg sync.WaitGroup
	var mgrOut []byte
	var mgrErr error
	wg.Go(func() {
		cmd := mb(mgr.ns, "manage", cfgFile, "--generators", "3", "--manager-listen", managerIP+":7070",
			"--token-file", token, "--start-delay", "3s", "--register-timeout", "1m", "--json", mergedJSON)
		mgrOut, mgrErr = cmd.CombinedOutput()
	})
	genOut := make([][]byte, len(gens))
	genErr := make([]error, len(gens))
	for i, g := range gens {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, "ip", "netns", "exec", g.ns, "env", "MAILBENCH_PASSWORD=", "JOB_COMPLETION_INDEX="+fmt.Sprint(i),
				bin, "run", cfgFile, "--manager", managerIP+":7070", "--token-file", token, "-q")
			genOut[i], genErr[i] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	if mgrErr != nil {
		if ee, ok := mgrErr.(*exec.ExitError); !ok || ee.ExitCode() != 1 { // 1: not compliant, still a result
			t.Fatalf("manage: %v\n%s", mgrErr, mgrOut)
		}
	}
	for i := range gens {
		if genErr[i] != nil {
			t.Errorf("generator %d: %v\n%s", i, genErr[i], genOut[i])
		}
	}
	for i, g := range gens {
		if !bytes.Contains(mgrOut, []byte(fmt.Sprintf("generator %d/3 registered: ", i))) || !bytes.Contains(mgrOut, []byte("("+g.ip+")")) {
			t.Errorf("the manager did not see generator %d register from %s:\n%s", i, g.ip, mgrOut)
		}
	}
	a, b := readCounts(t, singleJSON), readCounts(t, mergedJSON)
	if a.Lost != 0 || b.Lost != 0 || b.PendingRemote != 0 || b.RelayedRemote == 0 {
		t.Errorf("deliveries: single lost %d; managed lost %d, pending %d, relayed %d", a.Lost, b.Lost, b.PendingRemote, b.RelayedRemote)
	}
	// How many operations of each function fall in the window is the
	// server's race at its edges, not the schedule's: a session started
	// just before the window's end does its next step inside or after it
	// as fast as the server answers in each run; a message a cleanup
	// session deletes before anything timed it is delivered but has no
	// delivery time. The sessions, their types and the deliveries must be
	// the same; each function's count may differ by a few.
	for f := range a.Functions {
		if d := a.Functions[f] - b.Functions[f]; d < -3 || d > 3 {
			t.Errorf("%s: %d operations in the managed run, %d in the single run", f, b.Functions[f], a.Functions[f])
		}
	}
	for f := range b.Functions {
		if _, ok := a.Functions[f]; !ok {
			t.Errorf("%s: %d operations in the managed run, none in the single run", f, b.Functions[f])
		}
	}
	a.Functions, b.Functions = nil, nil
	sa, _ := json.MarshalIndent(a, "", " ")
	sb, _ := json.MarshalIndent(b, "", " ")
	t.Logf("single run: %s", sa)
	if string(sa) != string(sb) {
		t.Errorf("the managed run across namespaces differs from the single run:\nmanaged %s\nsingle  %s", sb, sa)
	}
}

// netnsCounts are what a managed run must share with the single run of the
// same seed.
type netnsCounts struct {
	ByType                                map[string]int64 `json:"by_type"`
	Functions                             map[string]int64 `json:"functions"`
	Accepted, LocalDeliveries             int64
	RemoteDeliveries, DeliveredLocal      int64
	RelayedRemote, Lost, PendingRemote    int64
	Duplicated, Corrupted, Unexpected     int64
	SessionsScheduled, SessionsStartedRun int64
}

func readCounts(t *testing.T, path string) netnsCounts {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sessions struct {
			Scheduled, Started int64
			ByType             map[string]int64 `json:"by_type"`
		} `json:"sessions"`
		Delivery struct {
			Accepted         int64 `json:"accepted"`
			LocalDeliveries  int64 `json:"local_deliveries"`
			RemoteDeliveries int64 `json:"remote_deliveries"`
			DeliveredLocal   int64 `json:"delivered_local"`
			RelayedRemote    int64 `json:"relayed_remote"`
			Lost             int64 `json:"lost"`
			PendingRemote    int64 `json:"pending_remote"`
			Duplicated       int64 `json:"duplicated"`
			Corrupted        int64 `json:"corrupted"`
			Unexpected       int64 `json:"unexpected"`
		} `json:"delivery"`
		Functions []struct {
			Function   string `json:"function"`
			Operations int64  `json:"operations"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	d := doc.Delivery
	c := netnsCounts{ByType: doc.Sessions.ByType, Functions: map[string]int64{}, Accepted: d.Accepted, LocalDeliveries: d.LocalDeliveries,
		RemoteDeliveries: d.RemoteDeliveries, DeliveredLocal: d.DeliveredLocal, RelayedRemote: d.RelayedRemote, Lost: d.Lost,
		PendingRemote: d.PendingRemote, Duplicated: d.Duplicated, Corrupted: d.Corrupted, Unexpected: d.Unexpected,
		SessionsScheduled: doc.Sessions.Scheduled, SessionsStartedRun: doc.Sessions.Started}
	for _, f := range doc.Functions {
		c.Functions[f.Function] = f.Operations
	}
	return c
}
