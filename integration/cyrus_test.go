package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/workload"
)

// The second server pair, Cyrus IMAP + Exim, where scripts/sut2/up puts
// it. Its tests skip without it, or fail under MAILBENCH_REQUIRE_SUT2=1
// (CI).
const (
	cyrusIMAPAddr = "127.0.0.1:3143"
	eximSMTPAddr  = "127.0.0.1:3525"
	requireEnv2   = "MAILBENCH_REQUIRE_SUT2"
)

func needSUT2(t *testing.T) {
	t.Helper()
	needServers(t, "Cyrus+Exim", "sudo scripts/sut2/up", requireEnv2, cyrusIMAPAddr, eximSMTPAddr)
}

// cyrusConfig is the shipped configs/cyrus-exim.toml (mailboxes.delimiter =
// "auto": every command places its folders in Cyrus' namespace).
func cyrusConfig(t *testing.T) *workload.Config { return shippedConfig(t, "cyrus-exim") }

// TestCyrusInitAndCleanTwice: against Cyrus (no RFC 5530 codes, "INBOX."
// namespace with "."): initAndCleanTwice.
func TestCyrusInitAndCleanTwice(t *testing.T) {
	needSUT2(t)
	initAndCleanTwice(t, cyrusConfig(t), "Cyrus")
}

// initAndCleanTwice: against a server whose personal namespace is "INBOX."
// with "." (Cyrus, Courier), init places the folders in the namespace and
// fills them to the plan, a second init appends nothing, and clean runs
// twice, the first removing every folder of the three users, the second
// none.
func initAndCleanTwice(t *testing.T, cfg *workload.Config, server string) {
	t.Helper()
	usersFile(t, cfg, "user41", "user42", "user43")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resolved, line, err := endpoints.ResolveNamespace(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(line)
	if resolved.Mailboxes.Sent != "INBOX.Sent" || !strings.Contains(strings.Join(resolved.Mailboxes.Folders, " "), "INBOX.Projects.Alpha") {
		t.Fatalf("folders not in %s's namespace: %+v", server, resolved.Mailboxes)
	}
	for i := range 2 {
		if _, err := populate.Clean(ctx, cfg, populate.Options{Workers: 3}); err != nil {
			t.Fatalf("clean %d: %v", i+1, err)
		}
	}
	users, err := resolved.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, u := range users {
		for _, p := range mailboxes.For(resolved, u.Login) {
			total += int64(p.Messages)
		}
	}
	for i, want := range []int64{total, 0} {
		s, err := populate.Init(ctx, cfg, populate.Options{Workers: 3})
		if err != nil {
			t.Fatalf("init %d: %v", i+1, err)
		}
		t.Logf("init %d: %v", i+1, s)
		if s.Appended != want || s.Present != total-want {
			t.Errorf("init %d: %+v; want %d appended, %d present", i+1, s, want, total-want)
		}
	}
	for _, u := range users {
		plan := mailboxes.For(resolved, u.Login)
		got := mailboxCounts(t, resolved, u, names(plan))
		for _, p := range plan {
			if got[p.Mailbox] != p.Messages {
				t.Errorf("%s %s: %d messages, want %d", u.Login, p.Mailbox, got[p.Mailbox], p.Messages)
			}
		}
	}
	for i, wantFolders := range []int{len(users) * len(resolved.Mailboxes.Folders), 0} {
		s, err := populate.Clean(ctx, cfg, populate.Options{Workers: 3})
		if err != nil {
			t.Fatalf("clean %d after init: %v", i+1, err)
		}
		if s.FoldersDeleted != wantFolders {
			t.Errorf("clean %d after init: %d folders removed, want %d", i+1, s.FoldersDeleted, wantFolders)
		}
	}
}

// sut2Dir is scripts/sut2's state dir.
func sut2Dir() string {
	if d := os.Getenv("MAILBENCH_SUT2_DIR"); d != "" {
		return d
	}
	return "/var/lib/mailbench-sut2"
}

// sutLogTail logs the last n lines of a server's log file, if it can be read.
func sutLogTail(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("%s: %v", path, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	t.Logf("%s, last %d lines:\n%s", path, n, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// TestCyrusEximShortRun is TestShortRun's workload against Cyrus + Exim:
// every SPEC function runs, Exim delivers to Cyrus over LMTP and relays to
// the sink, nothing is lost, duplicated or corrupted.
func TestCyrusEximShortRun(t *testing.T) {
	needSUT2(t)
	waitSinkPort(t)
	run, _, log := shortRun(t, cyrusConfig(t))
	if d := run.Delivery; d != nil && d.Lost > 0 {
		// What Exim said of the mail it did not deliver (once, in a CI run
		// under the load of the other packages' tests, Exim delivered
		// nothing at all: its logs are gone with the SUT's state dir).
		sutLogTail(t, filepath.Join(sut2Dir(), "log", "exim-main.log"), 40)
		sutLogTail(t, filepath.Join(sut2Dir(), "log", "exim-panic.log"), 20)
		sutLogTail(t, filepath.Join(sut2Dir(), "log", "cyrus-master.log"), 20)
	}
	checkShortRun(t, "Cyrus+Exim", run)
	checkServerWatched(t, run, "cyrus.cpu_cores", "exim.cpu_cores", "cyrus.processes", "host.cpu_percent")
	if errs := run.Table.Errors; errs.Errors > 0 {
		t.Errorf("%d of %d operations failed", errs.Errors, errs.Operations)
	}
	if !strings.Contains(log, `personal namespace "INBOX."`) {
		t.Errorf("the run did not place the folders in Cyrus' namespace:\n%s", log)
	}
}
