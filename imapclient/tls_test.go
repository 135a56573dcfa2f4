package imapclient

import (
	"context"
	"crypto/tls"
	"slices"
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

// TestNagleOverTheHandshake: Nagle is on for the first exchange after the
// TLS handshake (STARTTLS: the CAPABILITY; implicit TLS: the greeting,
// when the client has to write nothing for it) and off during the
// handshake, here one with a HelloRetryRequest, for the rest of the
// session, and throughout a connect whose handshake resumed a session
// (package internal/nagle).
func TestNagleOverTheHandshake(t *testing.T) {
	mt := startMem(t, 0)
	for _, mode := range []TLSMode{TLSStartTLS, TLSImplicit} {
		t.Run(string(mode), func(t *testing.T) {
			addr := mt.addr
			if mode == TLSImplicit {
				addr = mt.tlsAddr
			}
			dial, last := testutil.NagleDial()
			cfg := Config{Address: addr, TLS: mode, TLSConfig: mt.client.Clone(), Timeout: 5 * time.Second, DialContext: dial}
			cfg.TLSConfig.ClientSessionCache = tls.NewLRUClientSessionCache(1)
			c, err := Connect(context.Background(), cfg, testUser, testPassword)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			w := last().Writes()
			// A resumed handshake: Nagle stays off throughout.
			c, err = Connect(context.Background(), cfg, testUser, testPassword)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if resumed, w2 := c.Breakdown().Resumed, last().Writes(); !resumed || slices.Contains(w2, true) {
				t.Errorf("second connect resumed %v, writes (Nagle on?) %v: want resumed, and Nagle off after a resumed handshake", resumed, w2)
			}
			if total, withNagle := last().HandshakeWrites(); total != 3 || withNagle != 0 {
				t.Errorf("%d clear-text handshake writes, %d of them with Nagle on: want 3 (a HelloRetryRequest), none with Nagle", total, withNagle)
			}
			on := 0
			for _, n := range w {
				if n {
					on++
				}
			}
			if want := map[TLSMode]int{TLSStartTLS: 1, TLSImplicit: 0}[mode]; on != want {
				t.Errorf("writes (Nagle on?) %v: want %d with Nagle on, the first command after the handshake", w, want)
			}
			if len(w) == 0 || w[len(w)-1] || mode == TLSStartTLS && w[0] {
				t.Errorf("writes (Nagle on?) %v: STARTTLS and LOGIN should keep TCP_NODELAY", w)
			}
		})
	}
}
