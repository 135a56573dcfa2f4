package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/workload"
)

// TestManageWithTwoGenerators: `mailbench manage --generators 2` and two
// `mailbench run --manager` against one demo target: the manager's report
// is the merge of both shards, its sink got the relayed mail, and each
// generator exits 0 with the manager's verdict.
func TestManageWithTwoGenerators(t *testing.T) {
	if testing.Short() {
		t.Skip("a managed run of a few seconds")
	}
	cfgFile, token, tg := managedSetup(t)
	defer tg.Close()
	out := filepath.Join(filepath.Dir(cfgFile), "merged.json")
	mgr, gens := runManaged(t, cfgFile, token, 2, "manage", cfgFile, "--json", out, "--report-in-log")
	for i, g := range gens {
		if g.code != 0 || !strings.Contains(g.stdout, "1 runs reported to the manager") {
			t.Errorf("generator %d: exit %d\n%s\n%s", i, g.code, g.stdout, g.stderr)
		}
	}
	mgrOut, mgrErr := mgr.stdout, mgr.stderr
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sessions struct{ Started int64 } `json:"sessions"`
		Delivery struct {
			Lost, PendingRemote, RelayedRemote int64
		} `json:"delivery"`
		Shard *json.RawMessage `json:"shard"`
		Sink  struct{ Messages int64 }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Sessions.Started == 0 || doc.Shard != nil {
		t.Errorf("merged report: %d sessions, shard %v", doc.Sessions.Started, doc.Shard)
	}
	if !strings.Contains(mgrOut, "Summary Results") {
		t.Errorf("manage printed no report:\n%s", mgrOut)
	}
	// --report-in-log: the log alone gives the JSON report back.
	logPath := filepath.Join(t.TempDir(), "manager.log")
	os.WriteFile(logPath, []byte(mgrErr+mgrOut), 0o644)
	fromLog, err := readReportFile(logPath)
	if err != nil || !bytes.Equal(fromLog, b) {
		t.Errorf("the report in the log (%v) is not the --json file", err)
	}
	if strings.Contains(mgrOut+mgrErr+gens[0].stderr+gens[1].stderr, "sekFile") {
		t.Error("a password in the output")
	}
}

// cliResult is one mailbench command's exit code and output.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runManaged runs the manager command args with --generators n (on a free
// port, with the token, a 1 s start delay) and n `mailbench run cfgFile
// --manager` beside it, and returns their results once all have exited; it
// fails the test unless the manager exited with a verdict (0 or 1).
func runManaged(t *testing.T, cfgFile, token string, n int, args ...string) (cliResult, []cliResult) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	var mgr cliResult
	gens := make([]cliResult, n)
	var wg sync.WaitGroup
	wg.Go(func() {
		mgr.code, mgr.stdout, mgr.stderr = runMain(append(args, "--generators", strconv.Itoa(n), "--manager-listen", addr,
			"--token-file", token, "--start-delay", "1s")...)
	})
	for i := range gens {
		wg.Go(func() {
			g := &gens[i]
			g.code, g.stdout, g.stderr = runMain("run", cfgFile, "--manager", addr, "--token-file", token, "-q")
		})
	}
	wg.Wait()
	if mgr.code != exitCompliant && mgr.code != exitNotCompliant {
		t.Fatalf("%s: exit %d\n%s\n%s", args[0], mgr.code, mgr.stdout, mgr.stderr)
	}
	return mgr, gens
}

// managedSetup writes a workload pointing at a demo target it starts
// (relaying to the workload's sink.listen, a free port), and a token file.
func managedSetup(t *testing.T) (cfgFile, token string, tg *demo.Target) {
	t.Helper()
	dir := t.TempDir()
	sinkAddr := testutil.FreeAddr(t)
	conf := func(imap, smtp string) string {
		return fmt.Sprintf(`name = "managed"
[target]
imap = { address = %q }
smtp = { address = %q }
[sink]
listen = %q
[users]
count = 6
password = "sekFile"
[load]
sessions_per_hour = 7200
op_timeout = "2s"
think_time = "10ms"
[phases]
warmup = "0s"
measurement = "2s"
rampdown = "2s"
settle = "1s"
[mailboxes]
inbox_messages = 3
folder_messages_min = 1
folder_messages_max = 1
`, imap, smtp, sinkAddr)
	}
	cfgFile = filepath.Join(dir, "managed.toml")
	if err := os.WriteFile(cfgFile, []byte(conf("127.0.0.1:1", "127.0.0.1:2")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := workload.Load(cfgFile, workload.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err = orchestrator.StartDemoTarget(cfg, "127.0.0.1:0", "127.0.0.1:0", sinkAddr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, []byte(conf(tg.IMAPAddr(), tg.SMTPAddr())), 0o600); err != nil {
		t.Fatal(err)
	}
	token = filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgFile, token, tg
}

// TestManageRefuses: what manage and run --manager refuse before any run.
func TestManageRefuses(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MAILBENCH_TOKEN", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"manage", "quick"}, "manage needs --generators N"},
		{[]string{"manage", "quick", "--generators", "2", "--token-file", token}, "the embedded target lives in each generator's process"},
		{[]string{"manage", "dovecot-postfix", "--generators", "2"}, "no token: give --token-file FILE or set MAILBENCH_TOKEN"},
		{[]string{"manage", "dovecot-postfix", "--generators", "2", "--token-file", token, "--manager-listen", ":7070"}, "names no host"},
		{[]string{"manage", "dovecot-postfix", "--generators", "2", "--token-file", token, "--metrics-listen", "127.0.0.1:0"}, "give them to each 'mailbench run --manager'"},
		{[]string{"sweep", "dovecot-postfix", "--generators", "2", "--token-file", token, "--manager-listen", "127.0.0.1:0", "--ignore-memory-budget"}, "give them to each 'mailbench run --manager'"},
		{[]string{"run", "--manager", "127.0.0.1:1", "--token-file", token, "--json", "x.json"}, "--json cannot be combined with --manager"},
		{[]string{"run", "--manager", "127.0.0.1:1", "--token-file", token, "--rate", "100"}, "with --manager and no config the manager's is run as it is"},
		{[]string{"run", "--manager", "ftp://x", "--token-file", token}, "want HOST:PORT or http://HOST:PORT"},
		{[]string{"run", "quick", "--token-file", token}, "--token-file is a generator's"},
	} {
		code, stdout, stderr := runMain(tc.args...)
		if code != exitUsage || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s%s", tc.args, code, tc.want, stdout, stderr)
		}
	}
}

// TestSweepAcrossGenerators: a campaign with --generators gives each of
// its runs to the generators as one step: a sweep of two levels is two
// steps for each generator, and one result per level.
func TestSweepAcrossGenerators(t *testing.T) {
	if testing.Short() {
		t.Skip("two managed runs of a few seconds")
	}
	cfgFile, token, tg := managedSetup(t)
	defer tg.Close()
	out := filepath.Join(filepath.Dir(cfgFile), "sweep.json")
	_, gens := runManaged(t, cfgFile, token, 2, "sweep", cfgFile, "--levels", "50,100", "--json", out, "-q")
	for i, g := range gens {
		if g.code != 0 || !strings.Contains(g.stdout, "2 runs reported to the manager") {
			t.Errorf("generator %d: exit %d\n%s\n%s", i, g.code, g.stdout, g.stderr)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Levels []struct {
			Percent    float64 `json:"percent"`
			Iterations []struct {
				Run *struct { // report.WriteJSON form
					Sessions struct{ Started int64 } `json:"sessions"`
				} `json:"report"`
			} `json:"iterations"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Levels) != 2 {
		t.Fatalf("sweep JSON: %d levels, want 2:\n%.800s", len(doc.Levels), b)
	}
	for _, l := range doc.Levels {
		if len(l.Iterations) != 1 || l.Iterations[0].Run == nil || l.Iterations[0].Run.Sessions.Started == 0 {
			t.Errorf("level %v%%: no merged run with sessions:\n%.800s", l.Percent, b)
		}
	}
}
