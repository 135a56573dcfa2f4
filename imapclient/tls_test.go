package imapclient

import (
	"context"
	"crypto/tls"
	"slices"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"
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

// TestFirstExchangeNoStall: against every server behaviour around the TLS
// handshake (writes split with Nagle on as Postfix and Dovecot's OpenSSL
// write their tickets, no tickets, one ticket, TLS 1.2, resumed, a
// HelloRetryRequest), the handshake and the first exchange after it (the
// greeting or CAPABILITY) take no delayed ACK of the client's making:
// well under Linux's 40 ms minimum (package quickack, docs/tls.md). The
// median of five connects is the figure.
func TestFirstExchangeNoStall(t *testing.T) {
	for _, b := range testutil.TLSBehaviours() {
		mt := startMemAs(t, 0, b)
		for _, mode := range []TLSMode{TLSStartTLS, TLSImplicit} {
			t.Run(b.Name+"/"+string(mode), func(t *testing.T) {
				addr := mt.addr
				if mode == TLSImplicit {
					addr = mt.tlsAddr
				}
				cfg := Config{Address: addr, TLS: mode, TLSConfig: mt.client.Clone(), Timeout: 5 * time.Second}
				cfg.TLSConfig.ClientSessionCache = nil
				if b.Resume {
					cfg.TLSConfig.ClientSessionCache = tls.NewLRUClientSessionCache(4)
					c, err := Connect(context.Background(), cfg, testUser, testPassword)
					if err != nil {
						t.Fatal(err)
					}
					c.Close()
				}
				var first, hs []time.Duration
				for range 5 {
					c, err := Connect(context.Background(), cfg, testUser, testPassword)
					if err != nil {
						t.Fatal(err)
					}
					bd := c.Breakdown()
					c.Close()
					if bd.Resumed != b.Resume {
						t.Fatalf("resumed %v, want %v", bd.Resumed, b.Resume)
					}
					first, hs = append(first, bd.FirstExchange), append(hs, bd.Handshake)
				}
				slices.Sort(first)
				slices.Sort(hs)
				t.Logf("first exchange %v, handshake %v", first, hs)
				if first[2] >= 20*time.Millisecond || hs[2] >= 20*time.Millisecond {
					t.Errorf("median first exchange %v, handshake %v: a delayed-ACK stall (≥ 20ms; loopback takes well under 2 ms)", first[2], hs[2])
				}
			})
		}
	}
}
