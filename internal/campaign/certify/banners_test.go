package certify_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/campaign/certify"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/measure"
)

// ProbeBanners against the embedded target, as `mailbench certify` records
// them for the disclosure: plaintext, STARTTLS and implicit TLS (the
// clients trust the target's certificate, as a run's do). The greeting,
// the capabilities after login and the SMTP banner are the target's.
func TestProbeBannersEmbedded(t *testing.T) {
	for _, mode := range measure.TLSModes {
		t.Run(string(mode), func(t *testing.T) {
			cfg := testconfig.Quick(t, 0)
			cfg.Target.IMAP.TLS, cfg.Target.SMTP.TLS = mode, mode
			users, err := cfg.LoadUsers()
			if err != nil {
				t.Fatal(err)
			}
			opts := demo.Options{Users: users, LocalDomain: cfg.Users.LocalDomain}
			eps := endpoints.Settings(cfg)
			ic, sc := eps.IMAP, eps.Submit
			if mode != "none" {
				srv, _, err := tlsconf.EmbeddedTLS()
				if err != nil {
					t.Fatal(err)
				}
				opts.TLSConfig = srv
				opts.IMAPImplicitTLS, opts.SMTPImplicitTLS = mode == "implicit", mode == "implicit"
			}
			tg, err := demo.Start(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			// As `mailbench certify` does: trust exactly the certificate the
			// embedded target serves.
			if cert := tg.Certificate(); (cert != nil) != (mode != "none") {
				t.Fatalf("Certificate() = %d bytes with TLS %s", len(cert), mode)
			} else if cert != nil {
				ic.TLSConfig, sc.TLSConfig = tlsconf.PinnedClientTLS(cert), tlsconf.PinnedClientTLS(cert)
			}
			ic.Address, sc.Address = tg.IMAPAddr(), tg.SMTPAddr()
			b := certify.ProbeBanners(context.Background(), cfg, &ic, &sc)
			if b.Error != "" {
				t.Fatalf("Error %q", b.Error)
			}
			if !strings.HasPrefix(b.IMAPGreeting, "* OK") {
				t.Errorf("IMAP greeting %q, want * OK …", b.IMAPGreeting)
			}
			// The server's own greeting, also with STARTTLS (read before
			// the handshake).
			if want := "IMAP server ready"; !strings.Contains(b.IMAPGreeting, want) {
				t.Errorf("IMAP greeting %q: not the target's (%q)", b.IMAPGreeting, want)
			}
			for _, c := range []string{"IMAP4rev1", "IDLE", "UIDPLUS"} {
				if !slices.Contains(b.IMAPCapabilities, c) {
					t.Errorf("capabilities %q lack %s", b.IMAPCapabilities, c)
				}
			}
			if !slices.IsSorted(b.IMAPCapabilities) {
				t.Errorf("capabilities %q not sorted", b.IMAPCapabilities)
			}
			if !strings.HasPrefix(b.SMTPBanner, "220 ") || !strings.Contains(b.SMTPBanner, cfg.Users.LocalDomain) {
				t.Errorf("SMTP banner %q, want 220 %s …", b.SMTPBanner, cfg.Users.LocalDomain)
			}
			t.Logf("%q / %q / %q", b.IMAPGreeting, b.IMAPCapabilities, b.SMTPBanner)
		})
	}
	// A target that is not there: the probe never fails, it says why.
	cfg := testconfig.Quick(t, 0)
	eps := endpoints.Settings(cfg)
	ic, sc := eps.IMAP, eps.Submit
	ic.Address, sc.Address = "127.0.0.1:1", "127.0.0.1:1"
	b := certify.ProbeBanners(context.Background(), cfg, &ic, &sc)
	if b.IMAPGreeting != "" || b.SMTPBanner != "" || !strings.Contains(b.Error, "IMAP: ") || !strings.Contains(b.Error, "SMTP: ") {
		t.Errorf("no server: %+v", b)
	}
}
