package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report/render"
)

// TestWrongPasswordsAreUnverified: half the users of a users CSV have a
// wrong password. Their logins are refused, which is the auth error class
// (not protocol), and the mail delivered to them, which the checker cannot
// look for, is unverified: counted with a sample of the checker's errors,
// never called missing.
func TestWrongPasswordsAreUnverified(t *testing.T) {
	needSUT(t)
	waitSinkPort(t)
	cfg := sutConfig(t)
	pw, err := cfg.Password()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("user,password\n")
	for i := 1; i <= 8; i++ {
		p := pw
		if i > 4 {
			p = "wrong-" + pw
		}
		fmt.Fprintf(&b, "user%d,%s\n", i, p)
	}
	if err := os.WriteFile(dir+"/users.csv", []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.File, cfg.Users.File = dir+"/sut.toml", "users.csv"
	cfg.Phases.Warmup.Duration = 2 * time.Second
	cfg.Phases.Measurement.Duration = 15 * time.Second
	cfg.Phases.Rampdown.Duration = 5 * time.Second
	cfg.Load.OpTimeout.Duration = 5 * time.Second
	cfg.Phases.Settle.Duration = 2 * time.Second
	cfg.Compliance.DeliveryLimit.Duration = 10 * time.Second // the settle waits for the unverified mail until its limit
	cfg.Load.SessionsPerHour = 14400
	cfg.Load.ThinkTime.Duration = 50 * time.Millisecond
	cfg.Delivery.WatchUsers = 0

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	right, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := populate.Init(ctx, cfg, populate.Options{Users: right[:4]}); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	run, err := orchestrator.Run(ctx, context.Background(), cfg, orchestrator.Options{Log: &log})
	if err != nil {
		t.Fatalf("orchestrator.Run: %v\n%s", err, log.String())
	}
	var text bytes.Buffer
	if err := render.WriteText(&text, run); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())
	row, _ := run.Table.Row(measure.IMAPConnect)
	if row.ErrorsByClass[measure.Auth] == 0 || row.ErrorsByClass[measure.Protocol] != 0 {
		t.Errorf("IMAP Connect errors by class %v: want the refused logins as auth, none as protocol", row.ErrorsByClass)
	}
	d := run.Delivery
	if d == nil || d.Unverified == 0 || d.Lost != 0 {
		t.Fatalf("delivery accounting %+v: want unverified deliveries and none missing", d)
	}
	if c := run.DeliveryChecks; c == nil || len(c.ErrorSamples) == 0 || !strings.Contains(strings.Join(c.ErrorSamples, " "), "user") {
		t.Errorf("checker summary %+v: want samples of its errors", c)
	}
	if !strings.Contains(text.String(), "unverified") || strings.Contains(text.String(), "wrong-") {
		t.Errorf("the text report does not show the unverified mail, or shows a password")
	}
}

// TestDovecotRestartMidRun stops Dovecot for 7 s in the middle of a run (as
// root, through the SUT's own dovecot.conf) and starts it again. Mail that
// Postfix deferred meanwhile is found later (late) or still missing at the
// end of settle; it is never called lost, and every missing delivery counts
// as non-compliant in its Delivery Time row. The run ends on time.
func TestDovecotRestartMidRun(t *testing.T) {
	needSUT(t)
	waitSinkPort(t)
	if os.Geteuid() != 0 {
		unavailable(t, "stopping the SUT's Dovecot needs root")
	}
	conf := sutDir() + "/dovecot/dovecot.conf"
	if _, err := os.Stat(conf); err != nil {
		unavailable(t, "no SUT Dovecot config: "+err.Error())
	}
	// Whatever happens, the SUT is left running as up started it, with
	// nothing of this test's still queued for Dovecot: mail Postfix
	// deferred during the outage would otherwise arrive minutes later, in
	// the middle of another test. (And Postfix's smtpd, throttled for 60 s
	// if it failed to start without Dovecot's auth, answers again.)
	t.Cleanup(func() {
		startSUT(t)
		waitLocalQueueEmpty(t, 60*time.Second)
	})
	// Dovecot is restarted with the limits up gave it, not this process's
	// (a test started from a shell with ulimit -Sn 1024 gave it 1024).
	fdLimit := dovecotFDLimit()
	defer func() {
		if after := dovecotFDLimit(); after != fdLimit {
			t.Errorf("Dovecot's open-files limit was %q before the restart and is %q after it", fdLimit, after)
		}
	}()

	cfg := sutConfig(t)
	cfg.Users.Count = 8
	shorten(cfg, 2*time.Second, 25*time.Second, 2*time.Second, 14400)
	cfg.Compliance.DeliveryLimit.Duration = 15 * time.Second

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if _, err := populate.Init(ctx, cfg, populate.Options{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(10 * time.Second)
		if out, err := exec.Command("doveadm", "-c", conf, "stop").CombinedOutput(); err != nil {
			t.Errorf("stopping Dovecot: %v: %s", err, out)
			return
		}
		time.Sleep(7 * time.Second)
		startSUT(t, "--dovecot")
	}()
	began := time.Now()
	run, err := orchestrator.Run(ctx, context.Background(), cfg, orchestrator.Options{})
	if err != nil {
		t.Fatalf("orchestrator.Run: %v", err)
	}
	var text bytes.Buffer
	if err := render.WriteText(&text, run); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v; report:\n%s", time.Since(began).Round(time.Second), text.String())
	// The delivery accounting never calls mail lost (a connection can be:
	// "connection lost" error samples are about connections).
	_, acct, ok := strings.Cut(text.String(), "Delivery accounting")
	if !ok {
		t.Error("no delivery accounting in the report")
	}
	for _, l := range strings.Split(acct, "\n") {
		if !strings.Contains(l, "checker error:") && strings.Contains(strings.ToLower(l), "lost") {
			t.Errorf("the delivery accounting calls mail lost: %q", l)
		}
	}
	d := run.Delivery
	if d == nil || d.Accepted == 0 {
		t.Fatalf("no delivery accounting: %+v", d)
	}
	// Missing mail (accepted in the window: the outage is inside it) is
	// counted in the row as not within the limit.
	row, _ := run.Table.Row(measure.DeliveryLocal)
	if late := row.Operations - row.WithinLimit; d.LostLocal > 0 && late == 0 {
		t.Errorf("Delivery Time (local): %d deliveries are missing, but all %d operations are within the limit", d.LostLocal, row.Operations)
	}
}

// TestProbe: check --probe's library call against the project's
// Dovecot+Postfix logs in, sees IDLE, submits, and finds its message at the
// sink; with the sink on another port than the one Postfix relays to, the
// message never arrives and the probe names users.remote_domain and
// sink.listen.
func TestProbe(t *testing.T) {
	needSUT(t)
	waitSinkPort(t)
	cfg := sutConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := orchestrator.Probe(ctx, cfg, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = res.WriteText(&b)
	t.Logf("%s", b.String())
	if !res.OK() || !strings.Contains(b.String(), "IDLE") || !strings.Contains(b.String(), "reached the sink") {
		t.Errorf("the probe of a working SUT failed:\n%s", b.String())
	}

	cfg.Sink.Listen = "127.0.0.1:2599" // Postfix relays to 2526: nothing arrives here
	res, err = orchestrator.Probe(ctx, cfg, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	_ = res.WriteText(&b)
	t.Logf("%s", b.String())
	if res.OK() || !strings.Contains(b.String(), "did not reach the sink") || !strings.Contains(b.String(), "users.remote_domain") ||
		!strings.Contains(b.String(), "sink.listen") {
		t.Errorf("the probe of a relay that misses the sink did not say so:\n%s", b.String())
	}
}
