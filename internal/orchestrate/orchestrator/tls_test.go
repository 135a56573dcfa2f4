package orchestrator

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/internal/testing/memnet"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report/render"
)

// The embedded target serves the TLS mode each endpoint asks for (IMAP
// and SMTP independently), and its relay reaches a TLS sink: a very short
// run in each mode runs every function, counts a handshake for every
// successful connect that asked for TLS, and is compliant.
func TestRunEmbeddedTLSModes(t *testing.T) {
	tests := []struct {
		name               string
		imapTLS, smtpTLS   string
		sinkTLS            string
		wantIMAPHandshakes bool
		wantSMTPHandshakes bool
	}{
		{"starttls", "starttls", "starttls", "none", true, true},
		{"implicit", "implicit", "implicit", "none", true, true},
		{"imap implicit smtp starttls, sink implicit", "implicit", "starttls", "implicit", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Not parallel: on two cores, concurrent runs (TLS under the
				// race detector) miss their deadlines.
				cfg := shortQuick(t, 3*time.Second)
				cfg.Phases.Warmup.Duration = 500 * time.Millisecond
				cfg.Target.IMAP.TLS, cfg.Target.SMTP.TLS = measure.TLSMode(tt.imapTLS), measure.TLSMode(tt.smtpTLS)
				cfg.Sink.TLS = measure.TLSMode(tt.sinkTLS) // no cert_file/key_file: a generated certificate
				ctx := context.Background()
				run, err := Run(ctx, ctx, cfg, Options{Network: memnet.New()})
				if err != nil {
					t.Fatal(err)
				}
				var text bytes.Buffer
				if err := render.WriteText(&text, run); err != nil {
					t.Fatal(err)
				}
				for _, f := range measure.SPECFunctions {
					fs := run.Functions[f]
					if fs == nil || fs.Operations == 0 {
						t.Errorf("%s: no operations in the measurement window", f)
						continue
					}
					if n := fs.Errors[measure.TLS]; n > 0 {
						t.Errorf("%s: %d TLS errors", f, n)
					}
				}
				for _, c := range []struct {
					fn   measure.Function
					want bool
				}{{measure.IMAPConnect, tt.wantIMAPHandshakes}, {measure.SMTPConnect, tt.wantSMTPHandshakes}} {
					b, ok := run.Connect.Function(c.fn)
					if !ok || b.Connects == 0 {
						t.Errorf("%s: no connect breakdown", c.fn)
						continue
					}
					succeeded := b.Connects - b.Failed
					switch {
					case c.want && (b.Handshakes != succeeded || b.TLS.Count == 0):
						t.Errorf("%s: %d handshakes (TLS part counted %d) for %d successful connects, want one each",
							c.fn, b.Handshakes, b.TLS.Count, succeeded)
					case !c.want && b.Handshakes != 0:
						t.Errorf("%s: %d handshakes without TLS", c.fn, b.Handshakes)
					}
				}
				// Remote mail crossed the relay to the sink, over TLS when the
				// sink is implicit (a plaintext relay could not deliver at all).
				if d := run.Delivery; d == nil || d.RemoteDeliveries == 0 || d.RelayedRemote != d.RemoteDeliveries {
					t.Errorf("remote deliveries: %+v", d)
				}
				for _, w := range run.Warnings {
					if strings.Contains(w, "STARTTLS") || strings.Contains(w, "implicit") {
						t.Errorf("warning %q", w)
					}
				}
				if !run.Table.Compliant || !strings.Contains(text.String(), "Verdict: COMPLIANT") {
					t.Errorf("not compliant:\n%s", text.String())
				}
			})
		})
	}
}
