package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/plan/population"
	"github.com/mailbench/mailbench/internal/setup/populate"
	"github.com/mailbench/mailbench/workload"
)

// The third server pair, of a third lineage: Courier IMAP + OpenSMTPD,
// where scripts/sut3/up puts it. Its tests skip without it, or fail under
// MAILBENCH_REQUIRE_SUT3=1 (CI).
const (
	courierIMAPAddr   = "127.0.0.1:4143"
	opensmtpdSMTPAddr = "127.0.0.1:4525"
	requireEnv3       = "MAILBENCH_REQUIRE_SUT3"
)

func needSUT3(t *testing.T) {
	t.Helper()
	needServers(t, "Courier+OpenSMTPD", "sudo scripts/sut3/up", requireEnv3, courierIMAPAddr, opensmtpdSMTPAddr)
}

// courierConfig is the shipped configs/courier-opensmtpd.toml.
func courierConfig(t *testing.T) *workload.Config { return shippedConfig(t, "courier-opensmtpd") }

// sut3Dir is scripts/sut3's state dir.
func sut3Dir() string {
	if d := os.Getenv("MAILBENCH_SUT3_DIR"); d != "" {
		return d
	}
	return "/var/lib/mailbench-sut3"
}

// TestCourierInitAndCleanTwice: against Courier (Maildir, "INBOX."
// namespace with "."), init places the folders in the namespace and fills
// them to the plan, a second init appends nothing, and clean runs twice,
// the second removing nothing.
func TestCourierInitAndCleanTwice(t *testing.T) {
	needSUT3(t)
	cfg := courierConfig(t)
	usersFile(t, cfg, "user41", "user42", "user43")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resolved, line, err := populate.ResolveNamespace(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(line)
	if resolved.Mailboxes.Sent != "INBOX.Sent" || !strings.Contains(strings.Join(resolved.Mailboxes.Folders, " "), "INBOX.Projects.Alpha") {
		t.Fatalf("folders not in Courier's namespace: %+v", resolved.Mailboxes)
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
		for _, p := range population.Mailboxes(resolved, u.Login) {
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
		plan := population.Mailboxes(resolved, u.Login)
		got := mailboxCounts(t, resolved, u, names(plan))
		for _, p := range plan {
			if got[p.Mailbox] != p.Messages {
				t.Errorf("%s %s: %d messages, want %d", u.Login, p.Mailbox, got[p.Mailbox], p.Messages)
			}
		}
	}
	for i, wantFolders := range []int{3 * len(resolved.Mailboxes.Folders), 0} {
		s, err := populate.Clean(ctx, cfg, populate.Options{Workers: 3})
		if err != nil {
			t.Fatalf("clean %d after init: %v", i+1, err)
		}
		if s.FoldersDeleted != wantFolders {
			t.Errorf("clean %d after init: %d folders removed, want %d", i+1, s.FoldersDeleted, wantFolders)
		}
	}
}

// TestCourierOpenSMTPDShortRun is TestShortRun's workload against Courier +
// OpenSMTPD: every SPEC function runs, OpenSMTPD delivers into Courier's
// Maildirs and relays to the sink, nothing is lost, duplicated or
// corrupted, and no operation fails.
func TestCourierOpenSMTPDShortRun(t *testing.T) {
	needSUT3(t)
	waitSinkPort(t)
	run, _, log := shortRun(t, courierConfig(t))
	if d := run.Delivery; d != nil && d.Lost > 0 {
		sutLogTail(t, filepath.Join(sut3Dir(), "log", "smtpd.log"), 40)
		sutLogTail(t, filepath.Join(sut3Dir(), "log", "supervisor.log"), 20)
	}
	checkShortRun(t, "Courier+OpenSMTPD", run)
	if errs := run.Table.Errors; errs.Errors > 0 {
		t.Errorf("%d of %d operations failed", errs.Errors, errs.Operations)
	}
	if !strings.Contains(log, `personal namespace "INBOX."`) {
		t.Errorf("the run did not place the folders in Courier's namespace:\n%s", log)
	}
}
