package certify

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// Disclosure is the certification's disclosure section: what a reader needs
// to judge and reproduce the result.
type Disclosure struct {
	MailbenchVersion string
	ConfigFile       string
	// ConfigHash is resume.ConfigHash: SHA-256 of the config's
	// canonical form.
	ConfigHash string
	Banners    Banners
	Machine    Machine
	// System is the [disclosure] table of the config, key/value in order.
	System [][2]string
}

// Banners is what the server announced, verbatim (trimmed to 1 KiB each).
type Banners struct {
	IMAPGreeting     string   // the untagged greeting line: "* OK [CAPABILITY ...] Dovecot ready."
	IMAPCapabilities []string // CAPABILITY after login, sorted
	SMTPBanner       string   // the 220 banner (first line)
	Error            string   // why some were not recorded ("" when all were)
}

// Machine is what the generator can see of the machine it runs on.
type Machine struct {
	CPUModel    string
	Cores       int // logical CPUs (runtime.NumCPU)
	MemoryBytes int64
	Kernel      string // e.g. "Linux 6.8.0-45-generic"
	OS, Arch    string
	GoVersion   string
	Hostname    string
}

const maxBanner = 1 << 10

func clip(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if len(s) > maxBanner {
		return s[:maxBanner] + "…"
	}
	return s
}

// ProbeBanners connects once to cfg's IMAP and SMTP endpoints (the
// addresses of cfg, with its TLS settings and its op_timeout as every
// operation's deadline) as the first user, records the IMAP greeting, the
// capabilities after login and the SMTP banner, and logs out. imap and
// smtp, when not nil, replace the client settings made from cfg (the
// embedded target's, say). It never fails: what could not be recorded is
// in Banners.Error. It performs network I/O.
func ProbeBanners(ctx context.Context, cfg *workload.Config, imap *imapclient.Config, smtp *smtpclient.Config) Banners {
	var b Banners
	var errs []string
	eps, err := endpoints.For(cfg)
	ic, sc := eps.IMAP, eps.Submit
	if imap != nil {
		ic = *imap
	}
	if smtp != nil {
		sc = *smtp
	}
	if err != nil && (imap == nil || smtp == nil) {
		b.Error = "client settings: " + err.Error()
		return b
	}
	ic.Observer, sc.Observer = nil, nil
	users, err := cfg.LoadUsers()
	if err != nil || len(users) == 0 {
		b.Error = fmt.Sprintf("users: %v", err)
		return b
	}
	u := users[0]
	if c, err := imapclient.Connect(ctx, ic, u.Login, u.Password); err != nil {
		errs = append(errs, "IMAP: "+err.Error())
	} else {
		b.IMAPGreeting = clip(c.Greeting())
		b.IMAPCapabilities = c.Caps()
		_ = c.Logout(ctx)
		c.Close()
	}
	sc.Auth = cfg.Target.SMTP.Auth
	if sc.Username == "" {
		sc.Username, sc.Password = u.Login, u.Password
	}
	if c, err := smtpclient.Connect(ctx, sc); err != nil {
		errs = append(errs, "SMTP: "+err.Error())
	} else {
		b.SMTPBanner = clip(c.Banner())
		_ = c.Quit(ctx)
		c.Close()
	}
	b.Error = strings.Join(errs, "; ")
	return b
}

// ProbeMachine reads what the generator can see of its machine: the CPU
// model, logical cores, memory, kernel (from /proc on Linux; "" where it
// cannot tell), OS, architecture, Go version and host name. It reads files.
func ProbeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
	m.Hostname, _ = os.Hostname()
	if v, err := firstField("/proc/cpuinfo", "model name"); err == nil {
		m.CPUModel = v
	}
	if v, err := firstField("/proc/meminfo", "MemTotal"); err == nil {
		// "16318132 kB"
		if f := strings.Fields(v); len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				m.MemoryBytes = n << 10
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

// firstField returns the value of the first "key : value" line of a /proc
// file.
func firstField(path, key string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New(key + " not found")
}
