package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// namespace with "."): initAndCleanTwice.
func TestCourierInitAndCleanTwice(t *testing.T) {
	needSUT3(t)
	initAndCleanTwice(t, courierConfig(t), "Courier")
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
