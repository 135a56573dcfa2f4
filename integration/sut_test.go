package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/configs"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/run/populate"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/report/render"
	"github.com/mailbench/mailbench/workload"
)

// Where scripts/sut/up puts the SUT and where its Postfix relays.
const (
	imapAddr = "127.0.0.1:1143"
	smtpAddr = "127.0.0.1:2525"
	sinkAddr = "127.0.0.1:2526"
)

// requireEnv, when "1", turns a missing SUT into a failure (CI).
const requireEnv = "MAILBENCH_REQUIRE_SUT"

// needSUT skips (or, under MAILBENCH_REQUIRE_SUT=1, fails) the test when
// Dovecot and Postfix do not both greet within a few seconds.
func needSUT(t *testing.T) {
	t.Helper()
	needServers(t, "Dovecot+Postfix", "sudo scripts/sut/up", requireEnv, imapAddr, smtpAddr)
	logSUTStateOnFailure(t)
	flushLocalQueue(t)
}

// needServers skips the test when a server of the pair called name does
// not greet at its address, or fails it when env is "1"; start says how to
// start the pair.
func needServers(t *testing.T, name, start, env string, addrs ...string) {
	t.Helper()
	var missing []string
	for _, addr := range addrs {
		if err := greets(addr); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) == 0 {
		return
	}
	why := name + " not running: " + start + " (" + strings.Join(missing, "; ") + ")"
	if os.Getenv(env) == "1" {
		t.Fatalf("%s [%s=1]", why, env)
	}
	t.Skip(why)
}

// checkShortRun checks a shortRun of the pair called name: complete, every
// SPEC function and both delivery times measured, deliveries on both paths
// reconciled, nothing lost, duplicated or corrupted.
func checkShortRun(t *testing.T, name string, run *report.Run) {
	t.Helper()
	if run.Partial {
		t.Errorf("partial run: %s", run.PartialReason)
	}
	for _, f := range append(append([]measure.Function(nil), measure.SPECFunctions...), measure.DeliveryLocal, measure.DeliveryRemote) {
		if st := run.Functions[f]; st == nil || st.Operations == 0 {
			t.Errorf("%s: no operations in the measurement window", f)
		}
	}
	d := run.Delivery
	if d == nil || d.Accepted == 0 || d.LocalDeliveries == 0 || d.RemoteDeliveries == 0 {
		t.Fatalf("nothing to reconcile: %+v", d)
	}
	if d.Lost != 0 || d.Duplicated != 0 || d.Corrupted != 0 {
		t.Errorf("%s lost %d, duplicated %d, corrupted %d deliveries: %+v", name, d.Lost, d.Duplicated, d.Corrupted, *d)
	}
}

// unavailable skips the test for a missing environment, or fails it when
// the environment is required.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s [%s=1]", why, requireEnv)
	}
	t.Skip(why)
}

// greets reports whether addr answers with an IMAP or SMTP greeting
// within 3 s.
func greets(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return fmt.Errorf("%s: %v", addr, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("%s: no greeting: %v", addr, err)
	}
	if !strings.HasPrefix(line, "* OK") && !strings.HasPrefix(line, "220") {
		return fmt.Errorf("%s: unexpected greeting %q", addr, strings.TrimSpace(line))
	}
	return nil
}

// waitSinkPort waits (bounded) until nothing listens on the sink address,
// which the tests' sinks need; another sink there would take the mail.
func waitSinkPort(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ln, err := net.Listen("tcp", sinkAddr)
		if err == nil {
			ln.Close()
			return
		}
		if time.Now().After(deadline) {
			unavailable(t, fmt.Sprintf("%s is taken by another program (a sink?): %v", sinkAddr, err))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sutConfig is the shipped configs/dovecot-postfix.toml.
func sutConfig(t *testing.T) *workload.Config { return shippedConfig(t, "dovecot-postfix") }

// shippedConfig is the shipped configs/NAME.toml.
func shippedConfig(t *testing.T, name string) *workload.Config {
	t.Helper()
	file := "configs/" + name + ".toml"
	data, ok := configs.Lookup(name)
	if !ok {
		t.Fatalf("%s is not shipped", file)
	}
	cfg, err := workload.ParseConfig(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// shorten makes cfg a short run: the given warm-up, window and settle, a
// 5 s ramp-down and operation deadline (ramp-down must not be shorter),
// rate sessions/hour and a 50 ms think time.
func shorten(cfg *workload.Config, warmup, measurement, settle time.Duration, rate float64) {
	cfg.Phases.Warmup.Duration = warmup
	cfg.Phases.Measurement.Duration = measurement
	cfg.Phases.Rampdown.Duration = 5 * time.Second
	cfg.Load.OpTimeout.Duration = 5 * time.Second
	cfg.Phases.Settle.Duration = settle
	cfg.Load.SessionsPerHour = rate
	cfg.Load.ThinkTime.Duration = 50 * time.Millisecond
}

// shortRun makes cfg a short run on 8 users (a 20 s window at 18,000
// sessions/hour), populates them, runs it and returns the report with its
// text and the run's log. The settle may wait for a missing delivery until
// its limit (60 s) has passed: the deadline leaves room for it.
func shortRun(t *testing.T, cfg *workload.Config) (run *report.Run, text, log string) {
	t.Helper()
	cfg.Users.Count = 8
	shorten(cfg, 2*time.Second, 20*time.Second, 5*time.Second, 18000)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	s, err := populate.Init(ctx, cfg, populate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", s)
	var lb, tb bytes.Buffer
	run, err = orchestrator.Run(ctx, context.Background(), cfg, orchestrator.Options{Log: &lb})
	if err != nil {
		t.Fatalf("orchestrator.Run: %v\n%s", err, lb.String())
	}
	if err := render.WriteText(&tb, run); err != nil {
		t.Fatal(err)
	}
	t.Logf("run log:\n%s\nreport:\n%s", lb.String(), tb.String())
	return run, tb.String(), lb.String()
}

// usersFile writes a users CSV (with header) for logins in dir and points
// cfg at it through a config file in dir, as a user would.
func usersFile(t *testing.T, cfg *workload.Config, logins ...string) {
	t.Helper()
	pw, err := cfg.Password()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("user,password\n# SUT accounts for the integration tests\n")
	for _, l := range logins {
		fmt.Fprintf(&b, "%s,%s\n", l, pw)
	}
	if err := os.WriteFile(dir+"/users.csv", []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.File = dir + "/sut.toml"
	cfg.Users.File = "users.csv" // relative to the config file
}

// mailboxCounts returns STATUS MESSAGES of every mailbox of u's plan
// (-1 when it does not exist).
func mailboxCounts(t *testing.T, cfg *workload.Config, u workload.User, mailboxes []string) map[string]int {
	t.Helper()
	ctx := context.Background()
	c := login(t, cfg, u)
	defer c.Logout(ctx)
	got := map[string]int{}
	for _, mb := range mailboxes {
		n, err := c.Status(ctx, mb)
		if err != nil {
			got[mb] = -1
			continue
		}
		got[mb] = int(n)
	}
	return got
}

func login(t *testing.T, cfg *workload.Config, u workload.User) *imapclient.Client {
	t.Helper()
	eps, err := endpoints.For(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := imapclient.Connect(context.Background(), eps.IMAP, u.Login, u.Password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
