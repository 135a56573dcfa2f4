package imapclient

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

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
