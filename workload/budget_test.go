package workload

import (
	"os"
	"strings"
	"testing"
)

func quickConfig(t *testing.T) *Config {
	t.Helper()
	data, err := os.ReadFile("../configs/quick.toml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig("quick.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustPlan(t *testing.T, c *Config) *Plan {
	t.Helper()
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const gib = int64(1) << 30

func TestMemoryEstimateQuick(t *testing.T) {
	p := mustPlan(t, quickConfig(t))
	if m := p.Memory; m.Total < 64<<20 || m.Total > 256<<20 {
		t.Errorf("quick: estimate %s, want between the fixed 64 MiB and 256 MiB: %+v", FormatBytes(m.Total), m)
	}
}

// The estimate sees a plan's memory coming: `run quick --rate 1000000
// --users 20000` on the embedded target needs tens of GB.
func TestMemoryEstimateSizingAttempt(t *testing.T) {
	c := quickConfig(t)
	c.Users.Count = 20000
	c.Load.SessionsPerHour = 1e6
	m := mustPlan(t, c).Memory
	if m.Total < 12*gib {
		t.Errorf("20,000 users at 10⁶/h on the embedded target: estimate %s, want at least 12 GiB: %+v", FormatBytes(m.Total), m)
	}
	if !strings.Contains(m.Remedies(), "real server") {
		t.Errorf("remedies %q: want a real server suggested", m.Remedies())
	}
	err := m.CheckMemory(8 * gib)
	if err == nil || !strings.Contains(err.Error(), "8 GiB available") || !strings.Contains(err.Error(), "fewer users") {
		t.Errorf("CheckMemory(8 GiB) = %v", err)
	}
	if err := m.CheckMemory(0); err != nil {
		t.Errorf("unknown memory: CheckMemory(0) = %v, want nil", err)
	}
}

// A big population is the embedded target's cost only: against a real
// server the same users cost the generator little.
func TestMemoryEstimateRealServer(t *testing.T) {
	c := quickConfig(t)
	c.Users.Count = MaxUsers
	c.Mailboxes.InboxMessages = MaxMailboxMessages
	emb := mustPlan(t, c).Memory
	if emb.Total < 1000*1024*gib {
		t.Errorf("embedded, 10⁷ users × 10⁵ messages: %s, want petabytes", FormatBytes(emb.Total))
	}
	c.Target.Embedded = false
	c.Target.IMAP.Address, c.Target.SMTP.Address = "imap.example.test:143", "smtp.example.test:25"
	real := mustPlan(t, c).Memory
	if real.Population != 0 || real.RunMail != 0 || real.Total > 8*gib {
		t.Errorf("real server, 10⁷ users: %s (%+v), want no mailboxes and a few GiB at most", FormatBytes(real.Total), real)
	}
}

func TestMemoryEstimateGrowsWithItsInputs(t *testing.T) {
	base := mustPlan(t, quickConfig(t)).Memory.Total
	for name, change := range map[string]func(*Config){
		"users":    func(c *Config) { c.Users.Count *= 10 },
		"inbox":    func(c *Config) { c.Mailboxes.InboxMessages *= 10 },
		"sizes":    func(c *Config) { c.Messages.Sizes = []SizeShare{{Size: 1 << 20, Share: 100}} },
		"rate":     func(c *Config) { c.Load.SessionsPerHour *= 10 },
		"duration": func(c *Config) { c.Phases.Measurement.Duration *= 100 },
		"tls":      func(c *Config) { c.Target.IMAP.TLS = "starttls" },
	} {
		c := quickConfig(t)
		change(c)
		if got := mustPlan(t, c).Memory.Total; got <= base {
			t.Errorf("more %s: estimate %d, not above %d", name, got, base)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 24 * gib: "24 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSockets: the descriptor estimate counts both ends with the embedded
// target and one with a real server, and the caps' figure is above the
// expected one; CheckSockets errs only when the expected load does not
// fit, and warns of the caps.
func TestSockets(t *testing.T) {
	c := quickConfig(t)
	c.Load.MaxConcurrent = 400
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	emb := p.Sockets()
	c.Target.Embedded = false
	c.Target.IMAP.Address, c.Target.SMTP.Address = "127.0.0.1:143", "127.0.0.1:25"
	p2, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	real := p2.Sockets()
	if emb.Expected-socketsFixed != 2*(real.Expected-socketsFixed) || real.AtCap <= real.Expected || real.ConnectionsAtCap != 400+100+c.Delivery.WatchUsers {
		t.Errorf("embedded %+v, real %+v", emb, real)
	}
	for _, tt := range []struct {
		name         string
		fds, ports   int
		wantErr      string
		wantWarnings int
	}{
		{"fits", 1 << 20, 1 << 16, "", 0},
		{"unknown limits", 0, 0, "", 0},
		{"descriptors at the caps", real.Expected, 1 << 16, "", 1},
		{"ports at the caps", 1 << 20, real.ConnectionsExpected, "", 1},
		{"descriptors", real.Expected - 1, 1 << 16, "ulimit -n", 0},
		{"ports", 1 << 20, real.ConnectionsExpected - 1, "ip_local_port_range", 0},
	} {
		w, err := real.CheckSockets(tt.fds, tt.ports)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
		}
		if len(w) != tt.wantWarnings {
			t.Errorf("%s: warnings %q, want %d", tt.name, w, tt.wantWarnings)
		}
	}
}
