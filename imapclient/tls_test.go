package imapclient

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testutil"
	"github.com/mailbench/mailbench/measure"
)

// TestTLSFailures checks that failed handshakes are TLS errors and that
// their observation carries the phases reached (TCP, for STARTTLS the
// greeting) but no completed handshake.
func TestTLSFailures(t *testing.T) {
	mt := startMem(t, 0)
	untrusted := &tls.Config{} // system roots: the test certificate is unknown
	wrongName := mt.client.Clone()
	wrongName.ServerName = "imap.wrong.test"
	for _, tt := range []struct {
		name string
		mode TLSMode
		tc   *tls.Config
	}{
		{"untrusted certificate, implicit", TLSImplicit, untrusted},
		{"untrusted certificate, starttls", TLSStartTLS, untrusted},
		{"wrong server name, implicit", TLSImplicit, wrongName},
		{"wrong server name, starttls", TLSStartTLS, wrongName},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := mt.addr
			if tt.mode == TLSImplicit {
				addr = mt.tlsAddr
			}
			rec := &recorder{}
			c, err := Connect(context.Background(), Config{Address: addr, TLS: tt.mode, TLSConfig: tt.tc, Timeout: 5 * time.Second, Observer: rec}, testUser, testPassword)
			if c != nil {
				c.Close()
				t.Fatal("connected")
			}
			o := rec.last(t)
			checkClass(t, err, o, measure.IMAPConnect, measure.TLS)
			if o.Connect == nil || o.Connect.TCP <= 0 || o.Connect.TLSUsed || o.Connect.Auth != 0 {
				t.Errorf("phases %+v, want TCP only and no handshake", o.Connect)
			}
			if (o.Connect != nil && o.Connect.Greeting > 0) != (tt.mode == TLSStartTLS) {
				t.Errorf("phases %+v: greeting before STARTTLS only", o.Connect)
			}
		})
	}
}

// TestNagleOverTheHandshake: Nagle's algorithm is on from the TLS handshake
// to the end of the first exchange after it (STARTTLS: the CAPABILITY that
// follows the handshake), and off (TCP_NODELAY) before and after it
// (internal/nagle, docs/tls.md): ClientHello, Finished and, with STARTTLS,
// CAPABILITY are written with Nagle on; STARTTLS itself and LOGIN are not.
func TestNagleOverTheHandshake(t *testing.T) {
	mt := startMem(t, 0)
	for _, tt := range []struct {
		mode      TLSMode
		nagleRuns int // consecutive writes with Nagle on, at least
	}{{TLSStartTLS, 3}, {TLSImplicit, 2}} {
		t.Run(string(tt.mode), func(t *testing.T) {
			addr := mt.addr
			if tt.mode == TLSImplicit {
				addr = mt.tlsAddr
			}
			dial, last := testutil.NagleDial()
			c, err := Connect(context.Background(), Config{Address: addr, TLS: tt.mode, TLSConfig: mt.client.Clone(), Timeout: 5 * time.Second, DialContext: dial}, testUser, testPassword)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			w := last().Writes()
			run, best := 0, 0
			for _, on := range w {
				if on {
					run++
					best = max(best, run)
				} else {
					run = 0
				}
			}
			if best < tt.nagleRuns {
				t.Errorf("writes (Nagle on?) %v: want %d in a row with Nagle on over the handshake", w, tt.nagleRuns)
			}
			if len(w) == 0 || w[len(w)-1] || tt.mode == TLSStartTLS && w[0] {
				t.Errorf("writes (Nagle on?) %v: STARTTLS and LOGIN should keep TCP_NODELAY", w)
			}
		})
	}
}
