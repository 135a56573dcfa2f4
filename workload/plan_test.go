package workload

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// TestPlanGolden renders the plans of the shipped configs and compares them
// with testdata/config/plan/*.txt (rewrite with -update).
func TestPlanGolden(t *testing.T) {
	for _, name := range []string{"quick", "enterprise", "dovecot-postfix"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("../configs/" + name + ".toml")
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseConfig("configs/"+name+".toml", data)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(c)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := p.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "config", "plan", name+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(want) {
				t.Errorf("plan text:\n%s\nwant:\n%s", buf.String(), want)
			}
		})
	}
}

func embeddedConfig() *Config {
	c := DefaultConfig()
	c.Target.Embedded = true
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestPlanFigures(t *testing.T) {
	c := embeddedConfig()
	c.Users.Count = 100
	c.Load.SessionsPerHour = 3600
	c.Load.ThinkTime = Duration{time.Second}
	c.Load.InboundPerSession = 0.5
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	if p.SessionsPerHour != 3600 || p.InboundPerHour != 1800 {
		t.Errorf("rates %v, %v", p.SessionsPerHour, p.InboundPerHour)
	}
	wantSteps := map[string]float64{"check": 3, "read": 3 + 2, "cleanup": 5, "folders": 5, "send": 4}
	var pct, rate, mean float64
	for _, s := range p.Mix {
		pct += s.Percent
		rate += s.SessionsPerHour
		if s.Steps != wantSteps[s.Type] {
			t.Errorf("%s: steps %v, want %v", s.Type, s.Steps, wantSteps[s.Type])
		}
		if want := time.Duration(s.Steps * float64(time.Second+NominalOpTime)); s.Duration != want {
			t.Errorf("%s: duration %v, want %v", s.Type, s.Duration, want)
		}
		mean += s.Percent / 100 * s.Duration.Seconds()
	}
	if !near(pct, 100) || !near(rate, 3600) {
		t.Errorf("mix sums to %v%%, %v/h", pct, rate)
	}
	// Little's law: 1 session/s × mean duration.
	if !near(p.Concurrency, mean) || math.Abs(p.MeanSessionDuration.Seconds()-mean) > 1e-6 {
		t.Errorf("concurrency %v, mean %v; want %v", p.Concurrency, p.MeanSessionDuration, mean)
	}
	if p.SubmittedPerHour != 720 {
		t.Errorf("submitted %v, want 720", p.SubmittedPerHour)
	}
	if p.MeasuredSessions != 600 {
		t.Errorf("measured sessions %v, want 600 (10 min at 1/s)", p.MeasuredSessions)
	}
	perHour := map[measure.Function]float64{}
	for _, f := range p.Functions {
		perHour[f.Function] = f.PerHour
	}
	// Every session opens IMAP once (send sessions for APPEND).
	if !near(perHour[measure.IMAPConnect], 3600) {
		t.Errorf("IMAP Connect %v/h, want 3600", perHour[measure.IMAPConnect])
	}
	if !near(perHour[measure.SMTPConnect], 720+1800) {
		t.Errorf("SMTP Connect %v/h, want 2520", perHour[measure.SMTPConnect])
	}
	if !near(perHour[measure.IMAPFetchBody], 900*2) {
		t.Errorf("FETCH_NUM_BODYALL %v/h, want 1800", perHour[measure.IMAPFetchBody])
	}
	if want := len(measure.AllFunctions) - len(measure.ClientFunctions); len(p.Functions) != want {
		t.Errorf("%d functions, want all %d but the connected clients'", len(p.Functions), want)
	}
}

// TestPlanConnectedClients: with [clients], the plan times IMAP IDLE (a
// renewal per client every idle_renew, one after every announcement) and
// the new-mail notification (the local deliveries to connected users), and
// both are rows of the table, the notification with the delivery limit.
func TestPlanConnectedClients(t *testing.T) {
	c := quickConfig(t)
	c.Clients.Connected = c.Users.Count / 2
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	perHour := map[measure.Function]float64{}
	for _, f := range p.Functions {
		perHour[f.Function] = f.PerHour
	}
	notified := perHour[measure.DeliveryLocal] / 2
	if !near(perHour[measure.NewMailNotification], notified) || !near(perHour[measure.IMAPIdle], float64(c.Clients.Connected)*3600/(25*60)+notified) {
		t.Errorf("per hour: notification %v (want %v), IDLE %v", perHour[measure.NewMailNotification], notified, perHour[measure.IMAPIdle])
	}
	var rows []measure.Function
	for _, r := range p.Rules {
		rows = append(rows, r.Function)
		if r.Function == measure.NewMailNotification && r.Limit != c.Compliance.DeliveryLimit.Duration {
			t.Errorf("the notification's limit %v, want the delivery limit", r.Limit)
		}
	}
	if !slices.Contains(rows, measure.IMAPIdle) || !slices.Contains(rows, measure.NewMailNotification) {
		t.Errorf("rules %q lack the connected clients' rows", rows)
	}
}

func TestPlanReachableFunctions(t *testing.T) {
	f := func(fns ...measure.Function) []measure.Function { return fns }
	tests := []struct {
		name    string
		setup   func(*Config)
		want    []measure.Function
		limitOf map[measure.Function]time.Duration
	}{
		{"check only, no inbound", func(c *Config) {
			c.Sessions.Read.Weight, c.Sessions.Cleanup.Weight, c.Sessions.Folders.Weight, c.Sessions.Send.Weight = 0, 0, 0, 0
			c.Load.InboundPerSession = 0
		}, f(measure.IMAPConnect, measure.IMAPFetchRange, measure.IMAPSelectInbox), nil},
		{"check only, inbound", func(c *Config) {
			c.Sessions.Read.Weight, c.Sessions.Cleanup.Weight, c.Sessions.Folders.Weight, c.Sessions.Send.Weight = 0, 0, 0, 0
		}, f(measure.SMTPConnect, measure.SMTPData, measure.IMAPConnect, measure.IMAPFetchRange, measure.IMAPSelectInbox, measure.DeliveryLocal), nil},
		{"send only, all remote, sink on", func(c *Config) {
			c.Sessions.Check.Weight, c.Sessions.Read.Weight, c.Sessions.Cleanup.Weight, c.Sessions.Folders.Weight = 0, 0, 0, 0
			c.Load.InboundPerSession = 0
			c.Messages.RemoteShare = 1
		}, f(measure.SMTPConnect, measure.SMTPData, measure.IMAPAppend, measure.IMAPConnect, measure.DeliveryRemote), nil},
		{"read without bodies", func(c *Config) {
			c.Sessions.Check.Weight, c.Sessions.Cleanup.Weight, c.Sessions.Folders.Weight, c.Sessions.Send.Weight = 0, 0, 0, 0
			c.Sessions.Read.BodiesMin, c.Sessions.Read.BodiesMax = 0, 0
			c.Load.InboundPerSession = 0
			c.Compliance.Functions = map[string]FunctionLimit{string(measure.IMAPUIDFetch): {Limit: Duration{time.Second}}}
		}, f(measure.IMAPConnect, measure.IMAPSelectInbox, measure.IMAPUIDFetch),
			map[measure.Function]time.Duration{measure.IMAPUIDFetch: time.Second, measure.IMAPConnect: 5 * time.Second}},
		{"folders and cleanup, sink off", func(c *Config) {
			c.Sessions.Check.Weight, c.Sessions.Read.Weight, c.Sessions.Send.Weight = 0, 0, 0
			c.Sink.Enabled = false
		}, f(measure.SMTPConnect, measure.SMTPData, measure.IMAPConnect, measure.IMAPExpunge, measure.IMAPFetchRange,
			measure.IMAPList, measure.IMAPLsub, measure.IMAPSelectFolder, measure.IMAPSelectInbox, measure.IMAPStore,
			measure.IMAPUIDStore, measure.DeliveryLocal), map[measure.Function]time.Duration{measure.DeliveryLocal: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := embeddedConfig()
			tt.setup(c)
			p, err := NewPlan(c)
			if err != nil {
				t.Fatal(err)
			}
			var got []measure.Function
			for _, fp := range p.Functions {
				got = append(got, fp.Function)
				if fp.PerHour <= 0 {
					t.Errorf("%s listed with %v/h", fp.Function, fp.PerHour)
				}
				if want, ok := tt.limitOf[fp.Function]; ok && fp.Limit != want {
					t.Errorf("%s limit %v, want %v", fp.Function, fp.Limit, want)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("functions:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPlanWarningsAndErrors(t *testing.T) {
	c := embeddedConfig()
	c.Load.MaxConcurrent = 1
	c.Phases.Measurement = Duration{time.Second}
	c.Users.Count = 2
	c.Load.SessionsPerHour = 3600
	c.Sink.Enabled = false
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"max_concurrent_sessions", "measurement window", "users would overlap", "sink is disabled"} {
		if !strings.Contains(text, want) {
			t.Errorf("warnings lack %q:\n%s", want, text)
		}
	}
	c.Phases.Measurement = Duration{}
	if _, err := NewPlan(c); err == nil || !strings.Contains(err.Error(), "phases.measurement: must be > 0") {
		t.Errorf("NewPlan of invalid config: %v", err)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(b []byte) (int, error) {
	if w.n--; w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(b), nil
}

func TestPlanWriteTextError(t *testing.T) {
	p, err := NewPlan(embeddedConfig())
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 3; n++ {
		if err := p.WriteText(&failWriter{n: n}); err == nil || err.Error() != "disk full" {
			t.Errorf("after %d writes: err = %v", n, err)
		}
	}
}

func TestPlanTextHidesPassword(t *testing.T) {
	c := embeddedConfig()
	c.Users.Password = "Zq9-hunter2"
	p, _ := NewPlan(c)
	var buf bytes.Buffer
	p.WriteText(&buf)
	if strings.Contains(buf.String(), "hunter2") {
		t.Error("plan text shows the password")
	}
}

// TestPlanEndpoints: check shows each endpoint's TLS mode, CA, server name
// and auth mechanism, and where the password comes from, never the password.
func TestPlanEndpoints(t *testing.T) {
	src := `name = "tls"
[target.imap]
address = "imap.test:993"
tls = "implicit"
ca_file = "ca.pem"
server_name = "mail.test"
session_resumption = true
auth = "plain"
[target.smtp]
address = "smtp.test:587"
tls = "starttls"
insecure_skip_verify = true
auth = "login"
[target.inbound]
address = "mx.test:25"
tls = "none"
[sink]
enabled = true
listen = "0.0.0.0:2526"
tls = "starttls"
cert_file = "sink.pem"
key_file = "sink.key"
[users]
password_env = "PW_VAR"
password = "sekFallback"
`
	c, err := ParseConfig("tls.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  IMAP             imap.test:993  tls implicit (CA ca.pem, server name mail.test, resumption), auth plain\n",
		"  SMTP submission  smtp.test:587  tls starttls (certificate NOT verified (insecure_skip_verify)), auth login\n",
		"  inbound SMTP     mx.test:25     tls none, auth none\n",
		"  sink             0.0.0.0:2526   tls starttls (certificate sink.pem), no auth (the server under test relays to it)\n",
		"password:    $PW_VAR, else users.password (never shown)\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "sek") {
		t.Errorf("plan shows the password:\n%s", buf.String())
	}
}
