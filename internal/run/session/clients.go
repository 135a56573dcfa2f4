package session

import (
	"fmt"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/tlsconf"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// ClientSettings are the client settings of cfg's endpoints without TLS
// configurations: addresses, TLS modes, auth and the operation deadline.
func ClientSettings(cfg *workload.Config) (imapclient.Config, smtpclient.Config, smtpclient.Config) {
	in := cfg.Target.InboundEndpoint()
	return imapclient.Config{
			Address: cfg.Target.IMAP.Address, TLS: cfg.Target.IMAP.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: cfg.Target.IMAP.Auth,
		}, smtpclient.Config{
			Address: cfg.Target.SMTP.Address, TLS: cfg.Target.SMTP.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: cfg.Target.SMTP.Auth,
		}, smtpclient.Config{
			Address: in.Address, TLS: in.TLS,
			Timeout: cfg.Load.OpTimeout.Duration, Auth: "none",
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
