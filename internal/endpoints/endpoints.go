// Package endpoints is what reaches a server under test, derived once from
// a config: the client settings of its three endpoints (IMAP, SMTP
// submission, inbound SMTP) with their TLS configurations, the source
// addresses connections come from, and the personal namespace its folders
// live in. Sessions, long-lived clients, init and clean, the probes and the
// certification's disclosure all take their settings from here.
package endpoints

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/endpoints/tlsconf"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// Endpoints are the client settings of a config's three endpoints. A
// client's Observer is left unset: who uses a setting decides where its
// timings go.
type Endpoints struct {
	IMAP    imapclient.Config
	Submit  smtpclient.Config // SMTP submission, as a user sends
	Inbound smtpclient.Config // inbound SMTP, mail from outside (target.inbound)
}

// Settings are the client settings of cfg's endpoints without TLS
// configurations: addresses, TLS modes, auth and the operation deadline.
// With load.source_addresses, every connection comes from the next of
// them in turn. It doesn't perform I/O and reads no file.
func Settings(cfg *workload.Config) Endpoints {
	in := cfg.Target.InboundEndpoint()
	dial := SourceDialer(cfg.Load.SourceAddresses)
	maxResp, maxLit := cfg.Load.MaxResponseBytes, cfg.Load.MaxLiteralBytes
	return Endpoints{
		IMAP: imapclient.Config{
			Address: cfg.Target.IMAP.Address, TLS: cfg.Target.IMAP.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: cfg.Target.IMAP.Auth, DialContext: dial,
			MaxResponseBytes: int64(maxResp), MaxLiteralBytes: int64(maxLit),
		},
		Submit: smtpclient.Config{
			Address: cfg.Target.SMTP.Address, TLS: cfg.Target.SMTP.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: cfg.Target.SMTP.Auth, DialContext: dial,
			MaxReplyBytes: maxResp,
		},
		Inbound: smtpclient.Config{
			Address: in.Address, TLS: in.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: "none", DialContext: dial,
			MaxReplyBytes: maxResp,
		},
	}
}

// SourceDialer dials TCP from each of addrs in turn (one counter for every
// connection of the run), without keep-alive probes, as the clients' own
// dialer does; nil when addrs is empty: the clients' default. Its function
// is safe for concurrent use.
func SourceDialer(addrs []string) func(ctx context.Context, network, address string) (net.Conn, error) {
	if len(addrs) == 0 {
		return nil
	}
	dialers := make([]*net.Dialer, len(addrs))
	for i, a := range addrs {
		dialers[i] = &net.Dialer{KeepAlive: -1, LocalAddr: &net.TCPAddr{IP: net.ParseIP(a)}}
	}
	var next atomic.Uint64
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		d := dialers[(next.Add(1)-1)%uint64(len(dialers))]
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, fmt.Errorf("from %s: %w", d.LocalAddr.(*net.TCPAddr).IP, err)
		}
		return c, nil
	}
}

// For are the client settings for a real server's endpoints: Settings
// with each endpoint's TLS settings (reading CA files). `mailbench init`,
// runs and probes share them.
func For(cfg *workload.Config) (Endpoints, error) {
	e := Settings(cfg)
	var err error
	if e.IMAP.TLSConfig, err = tlsconf.Client(cfg.Target.IMAP); err != nil {
		return e, fmt.Errorf("target.imap: %w", err)
	}
	if e.Submit.TLSConfig, err = tlsconf.Client(cfg.Target.SMTP); err != nil {
		return e, fmt.Errorf("target.smtp: %w", err)
	}
	if e.Inbound.TLSConfig, err = tlsconf.Client(cfg.Target.InboundEndpoint()); err != nil {
		return e, fmt.Errorf("target.inbound: %w", err)
	}
	return e, nil
}
