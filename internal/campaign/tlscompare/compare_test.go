package tlscompare

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/internal/testing/testutil"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

func sutConfig(imapTLS, smtpTLS string) *workload.Config {
	cfg := &workload.Config{Name: "t"}
	cfg.Load.SessionsPerHour = 3600
	cfg.Target.IMAP = workload.Endpoint{Address: "127.0.0.1:1143", TLS: measure.TLSMode(imapTLS), CAFile: "/ca.pem", Auth: "plain"}
	cfg.Target.SMTP = workload.Endpoint{Address: "127.0.0.1:2525", TLS: measure.TLSMode(smtpTLS), ServerName: "sut.test"}
	if imapTLS == "implicit" {
		cfg.Target.IMAP.Address = "127.0.0.1:1993"
	}
	return cfg
}

func TestVariants(t *testing.T) {
	embedded := sutConfig("implicit", "none")
	embedded.Target.Embedded = true
	type want struct{ imapTLS, smtpTLS, imapAddr, smtpAddr string }
	tests := []struct {
		name    string
		cfg     *workload.Config
		addrs   Addresses
		want    []want // plaintext, TLS, TLS + resumption
		wantErr string
	}{
		{"plaintext config becomes starttls", sutConfig("none", "none"), Addresses{}, []want{
			{"none", "none", "127.0.0.1:1143", "127.0.0.1:2525"},
			{"starttls", "starttls", "127.0.0.1:1143", "127.0.0.1:2525"},
			{"starttls", "starttls", "127.0.0.1:1143", "127.0.0.1:2525"},
		}, ""},
		{"implicit IMAP with a plaintext address", sutConfig("implicit", "starttls"), Addresses{PlainIMAP: "127.0.0.1:1143"}, []want{
			{"none", "none", "127.0.0.1:1143", "127.0.0.1:2525"},
			{"implicit", "starttls", "127.0.0.1:1993", "127.0.0.1:2525"},
			{"implicit", "starttls", "127.0.0.1:1993", "127.0.0.1:2525"},
		}, ""},
		{"implicit IMAP without a plaintext address", sutConfig("implicit", "none"), Addresses{}, nil, "--plain-imap"},
		// The embedded target serves implicit TLS too, on the same
		// address: no plaintext address needed.
		{"embedded: keeps implicit", embedded, Addresses{}, []want{
			{"none", "none", "127.0.0.1:1993", "127.0.0.1:2525"},
			{"implicit", "starttls", "127.0.0.1:1993", "127.0.0.1:2525"},
			{"implicit", "starttls", "127.0.0.1:1993", "127.0.0.1:2525"},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *tt.cfg
			vs, err := Variants(tt.cfg, tt.addrs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != 3 {
				t.Fatalf("%d variants", len(vs))
			}
			for i, v := range vs {
				c := v.Config
				got := want{string(c.Target.IMAP.TLS), string(c.Target.SMTP.TLS), c.Target.IMAP.Address, c.Target.SMTP.Address}
				if got != tt.want[i] || v.IMAPTLS != got.imapTLS || v.SMTPTLS != got.smtpTLS {
					t.Errorf("%s: %+v, want %+v", v.Name, got, tt.want[i])
				}
				resume := i == 2
				if v.Resumption != resume || c.Target.IMAP.SessionResumption != resume || c.Target.SMTP.SessionResumption != resume {
					t.Errorf("%s: resumption %v/%v/%v, want %v", v.Name, v.Resumption, c.Target.IMAP.SessionResumption, c.Target.SMTP.SessionResumption, resume)
				}
				if c.Target.IMAP.CAFile != tt.cfg.Target.IMAP.CAFile || c.Target.SMTP.ServerName != tt.cfg.Target.SMTP.ServerName || c.Target.IMAP.Auth != "plain" {
					t.Errorf("%s: endpoint settings not kept: %+v %+v", v.Name, c.Target.IMAP, c.Target.SMTP)
				}
			}
			if tt.cfg.Target != before.Target {
				t.Errorf("Variants modified its argument: %+v", tt.cfg.Target)
			}
		})
	}
}

// fakeRun reports what a server would show for cfg: TLS handshakes in TLS
// runs, every second one resumed with resumption on, and it burns some CPU.
func fakeRun(applyTLS bool) campaign.RunFunc {
	return func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		if cfg.Target.IMAP.Address == "fail" {
			return nil, errors.New("boom")
		}
		rules := compliance.Rules{MaxErrorPercent: 1}
		stats := map[measure.Function]*metrics.FunctionStats{}
		b := metrics.NewBreakdown()
		for _, fn := range metrics.ConnectFunctions {
			rules.Functions = append(rules.Functions, compliance.Rule{Function: fn, Limit: time.Second, RequiredPercent: 95})
			fs := metrics.NewFunctionStats(fn, time.Second)
			stats[fn] = fs
			for i := range 100 {
				tlsOn := applyTLS && cfg.Target.IMAP.TLS != "none"
				d := 2 * time.Millisecond
				if tlsOn {
					d = 5 * time.Millisecond
				}
				fs.Record(d, measure.OK)
				p := &measure.ConnectPhases{
					TCP: 100 * time.Microsecond, Greeting: time.Millisecond, TLSUsed: tlsOn,
					TLS:     map[bool]time.Duration{true: 3 * time.Millisecond}[tlsOn],
					Resumed: tlsOn && cfg.Target.IMAP.SessionResumption && i%2 == 1,
				}
				if tlsOn {
					// SMTP's full handshakes stall 40 ms after the handshake
					// (Postfix with a TCP_NODELAY client); resumed ones and
					// IMAP's do not.
					p.Handshake, p.ClearExchange, p.FirstExchange = 2*time.Millisecond, 400*time.Microsecond, 900*time.Microsecond
					if fn == measure.SMTPConnect && !p.Resumed {
						p.FirstExchange = 44 * time.Millisecond
					}
				}
				b.Observe(measure.Observation{Function: fn, Duration: d, Connect: p})
			}
		}
		end := time.Now().Add(20 * time.Millisecond)
		for x := 0; time.Now().Before(end); x++ {
			_ = x * x
		}
		run := &report.Run{Name: cfg.Name, SessionCounts: report.SessionCounts{SessionsStarted: 50, AchievedSessionsPerHour: 3600}, Functions: stats}
		run.Evaluate(rules)
		run.Connect = b.Snapshot()
		return run, nil
	}
}

func TestRunWithFakeRunner(t *testing.T) {
	ctx := context.Background()
	res, err := Run(ctx, ctx, sutConfig("none", "none"), Options{Run: fakeRun(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || len(res.Notes) != 0 {
		t.Fatalf("rows %+v notes %q", res.Rows, res.Notes)
	}
	wantResumed := []int64{0, 0, 50}
	wantHandshakes := []int64{0, 100, 100}
	for i, r := range res.Rows {
		f, ok := r.Connect.Function(measure.IMAPConnect)
		if !ok || f.Handshakes != wantHandshakes[i] || f.Resumed != wantResumed[i] {
			t.Errorf("%s: breakdown %+v", r.Variant, f)
		}
		if r.SessionsStarted != 50 || r.SessionsPerHour != 3600 || !r.Compliant || r.WorstPercent != 100 || r.IMAPConnect.Operations != 100 {
			t.Errorf("%s: row %+v", r.Variant, r)
		}
		if r.CPU < 5*time.Millisecond || r.CPUPerSession != r.CPU/50 {
			t.Errorf("%s: CPU %v, per session %v; the runner burnt 20ms", r.Variant, r.CPU, r.CPUPerSession)
		}
	}
	if p := res.Rows[1].IMAPConnect.P50; p < 4*time.Millisecond {
		t.Errorf("TLS row connect p50 %v, want the TLS run's 5ms", p)
	}
}

func TestRunNotes(t *testing.T) {
	ctx := context.Background()
	// A runner that ignores TLS settings is caught.
	res, err := Run(ctx, ctx, sutConfig("none", "none"), Options{Run: fakeRun(false)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 2 || !strings.Contains(res.Notes[0], "TLS: no TLS handshake") || !strings.Contains(res.Notes[1], "TLS + resumption: no TLS handshake") {
		t.Errorf("notes %q", res.Notes)
	}
	// A failing run leaves a row with its error; the others still run.
	cfg := sutConfig("implicit", "none")
	res, err = Run(ctx, ctx, cfg, Options{Run: fakeRun(true), Addresses: Addresses{PlainIMAP: "fail"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.Rows[0].Err != "boom" || res.Rows[1].Err != "" || res.Rows[2].SessionsStarted != 50 {
		t.Errorf("rows %+v", res.Rows)
	}
	// A stopped comparison runs nothing more.
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	res, err = Run(stopped, ctx, sutConfig("none", "none"), Options{Run: fakeRun(true)})
	if err != nil || len(res.Rows) != 0 || len(res.Notes) == 0 {
		t.Errorf("stopped: %v rows %d notes %q", err, len(res.Rows), res.Notes)
	}
}

// A run stopped early shows PARTIAL, whatever its table says, and a note.
func TestRunPartial(t *testing.T) {
	ctx := context.Background()
	fake := fakeRun(true)
	partial := func(stop, kill context.Context, cfg *workload.Config) (*report.Run, error) {
		run, err := fake(stop, kill, cfg)
		if run != nil && cfg.Target.IMAP.SessionResumption {
			run.Partial, run.PartialReason = true, "interrupted"
		}
		return run, err
	}
	res, err := Run(ctx, ctx, sutConfig("none", "none"), Options{Run: partial})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.Rows[1].Partial || !res.Rows[2].Partial || !res.Rows[2].Compliant {
		t.Fatalf("rows %+v", res.Rows)
	}
	var buf bytes.Buffer
	if err := res.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	var verdict string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "verdict") {
			verdict = strings.Join(strings.Fields(l), " ")
		}
	}
	if verdict != "verdict COMPLIANT COMPLIANT PARTIAL" {
		t.Errorf("verdict row %q", verdict)
	}
	if !strings.Contains(out, "note: TLS + resumption: stopped early (interrupted): not a valid result") {
		t.Errorf("no note for the partial run:\n%s", out)
	}
}

func TestWriteTextGolden(t *testing.T) {
	ctx := context.Background()
	res, err := Run(ctx, ctx, sutConfig("none", "none"), Options{Run: fakeRun(true)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Rows { // CPU is the only nondeterministic figure
		res.Rows[i].CPUPerSession = time.Duration(i+1) * 1500 * time.Microsecond
	}
	failed := &Result{Name: "t", Rate: 7200, Rows: []Row{
		{Variant: "plaintext", IMAPTLS: "none", SMTPTLS: "none", Err: "sink: listen: address in use"},
		res.Rows[1],
	}, Notes: checkRows([]Row{{Variant: "plaintext", IMAPTLS: "none", SMTPTLS: "none"}})}
	for _, tt := range []struct {
		name string
		res  *Result
	}{{"fake", res}, {"failed", failed}} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.res.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tt.name+".txt"), buf.Bytes())
		})
	}
}

// TestEmbeddedComparison runs the real comparison against the embedded
// target with short phases.
func TestEmbeddedComparison(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded target three times")
	}
	synctest.Test(t, func(t *testing.T) {
		cfg := testconfig.Quick(t, 2*time.Second)
		cfg.Users.Count = 5
		cfg.Mailboxes.InboxMessages = 5
		cfg.Mailboxes.FolderMessagesMin, cfg.Mailboxes.FolderMessagesMax = 1, 2
		cfg.Load.ThinkTime.Duration = 5 * time.Millisecond
		cfg.Phases.Settle.Duration = 0
		ctx := context.Background()
		res, err := Run(ctx, ctx, cfg, Options{Run: campaign.Orchestrated(orchestrator.Options{Network: memnet.New()})})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 3 {
			t.Fatalf("%d rows", len(res.Rows))
		}
		for _, r := range res.Rows {
			if r.Err != "" || r.SessionsStarted == 0 || r.IMAPConnect.Operations == 0 || r.CPUPerSession <= 0 {
				t.Errorf("%s: %+v", r.Variant, r)
			}
		}
		var buf bytes.Buffer
		if err := res.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", buf.String())
		if res.Rows[0].Connect == nil {
			t.Log("bench does not report the connect breakdown yet: resumption checks skipped")
			return
		}
		for i, r := range res.Rows {
			f, _ := r.Connect.Function(measure.IMAPConnect)
			if (f.Handshakes > 0) != (i > 0) || (f.Resumed > 0) != (i == 2) {
				t.Errorf("%s: %d handshakes, %d resumed", r.Variant, f.Handshakes, f.Resumed)
			}
		}
	})
}

// TestStallNoteNeedsResumptionToAvoidIt: the note that what resumption
// seems to save is the stall appears only when the resumption row stalled
// in clearly fewer of its connects (the fake: half of them, its resumed
// ones), not against a server whose resumed handshakes stall as much.
func TestStallNoteNeedsResumptionToAvoidIt(t *testing.T) {
	ctx := context.Background()
	const phrase = "what resumption seems to save against this row is mostly the stall"
	for _, sameStall := range []bool{false, true} {
		res, err := Run(ctx, ctx, sutConfig("none", "none"), Options{Run: fakeRun(true)})
		if err != nil {
			t.Fatal(err)
		}
		if sameStall {
			res.Rows[2].Connect = res.Rows[1].Connect
		}
		var b strings.Builder
		if err := res.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), phrase); got == sameStall {
			t.Errorf("resumption row stalling as much: %v; the note says resumption saves the stall: %v\n%s", sameStall, got, b.String())
		}
	}
}
