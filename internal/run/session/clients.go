package session

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/tlsconf"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// ClientSettings are the client settings of cfg's endpoints without TLS
// configurations: addresses, TLS modes, auth and the operation deadline.
// With load.source_addresses, every connection comes from the next of
// them in turn.
func ClientSettings(cfg *workload.Config) (imapclient.Config, smtpclient.Config, smtpclient.Config) {
	in := cfg.Target.InboundEndpoint()
	dial := SourceDialer(cfg.Load.SourceAddresses)
	maxResp, maxLit := cfg.Load.MaxResponseBytes, cfg.Load.MaxLiteralBytes
	return imapclient.Config{
			Address: cfg.Target.IMAP.Address, TLS: cfg.Target.IMAP.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: cfg.Target.IMAP.Auth, DialContext: dial,
			MaxResponseBytes: int64(maxResp), MaxLiteralBytes: int64(maxLit),
		}, smtpclient.Config{
			Address: cfg.Target.SMTP.Address, TLS: cfg.Target.SMTP.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: cfg.Target.SMTP.Auth, DialContext: dial,
			MaxReplyBytes: maxResp,
		}, smtpclient.Config{
			Address: in.Address, TLS: in.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: "none", DialContext: dial,
			MaxReplyBytes: maxResp,
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

// ClientConfigs are the client settings for a real server's endpoints
// (IMAP, SMTP submission, inbound SMTP): address, TLS mode and settings
// (reading CA files), auth mechanism, and cfg.Load.OpTimeout as every
// operation's deadline; no Observer. `mailbench init` and runs share them.
func ClientConfigs(cfg *workload.Config) (imap imapclient.Config, submit, inbound smtpclient.Config, err error) {
	imap, submit, inbound = ClientSettings(cfg)
	if imap.TLSConfig, err = tlsconf.Client(cfg.Target.IMAP); err != nil {
		return imap, submit, inbound, fmt.Errorf("target.imap: %w", err)
	}
	if submit.TLSConfig, err = tlsconf.Client(cfg.Target.SMTP); err != nil {
		return imap, submit, inbound, fmt.Errorf("target.smtp: %w", err)
	}
	if inbound.TLSConfig, err = tlsconf.Client(cfg.Target.InboundEndpoint()); err != nil {
		return imap, submit, inbound, fmt.Errorf("target.inbound: %w", err)
	}
	return imap, submit, inbound, nil
}
