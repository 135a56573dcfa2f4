package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/workload"
)

// ProbeStep is one check of Probe: what was tried, whether it worked, what
// was found or what is wrong, in words that name the config's keys.
type ProbeStep struct {
	Name   string
	OK     bool
	Detail string
}

// ProbeResult is what Probe found.
type ProbeResult struct {
	Steps []ProbeStep
}

// OK reports whether every step worked.
func (r *ProbeResult) OK() bool {
	for _, s := range r.Steps {
		if !s.OK {
			return false
		}
	}
	return len(r.Steps) > 0
}

// WriteText renders the steps, one line each; it performs I/O only on w.
func (r *ProbeResult) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("probe:\n")
	for _, s := range r.Steps {
		mark := "ok  "
		if !s.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %-24s %s\n", mark, s.Name, s.Detail)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// DefaultProbeWait is how long Probe waits for its message at the sink.
const DefaultProbeWait = 30 * time.Second

// probeSinkShutdown bounds the probe sink's graceful shutdown.
const probeSinkShutdown = 5 * time.Second

// Probe checks, before any run, that cfg's server can be benchmarked: it
// logs in over IMAP as the first user and reports the capabilities that
// matter (IDLE, UIDPLUS, NAMESPACE, AUTH mechanisms), connects to the SMTP
// submission endpoint (STARTTLS, AUTH), sends one message to the remote
// domain through the server and waits up to wait for it at a sink of its
// own on sink.listen. What fails is said in words that name the config
// line to look at. The embedded target has nothing to probe. It performs
// network I/O on the config's endpoints and sink address.
func Probe(ctx context.Context, cfg *workload.Config, wait time.Duration) (*ProbeResult, error) {
	res := &ProbeResult{}
	add := func(name string, ok bool, format string, a ...any) {
		res.Steps = append(res.Steps, ProbeStep{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
	}
	if cfg.Target.Embedded {
		add("target", true, "the embedded target: nothing to probe")
		return res, nil
	}
	users, err := cfg.LoadUsers()
	if err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, errors.New("probe: no users")
	}
	u := users[0]
	eps, err := endpoints.For(cfg)
	if err != nil {
		return nil, err
	}
	imapCfg, smtpCfg := eps.IMAP, eps.Submit

	// IMAP: connect, log in, capabilities.
	ic, err := imapclient.Connect(ctx, imapCfg, u.Login, u.Password)
	if err != nil {
		add("IMAP login", false, "%s as %s: %v; %s", imapCfg.Address, u.Login, err, imapFault(cfg, err))
	} else {
		caps := ic.Caps()
		var have, missing []string
		for _, c := range []struct{ name, without string }{
			{"IDLE", "delivery times of watched INBOXes fall back to polling"},
			{"UIDPLUS", "no effect on the workload"},
			{"NAMESPACE", "the folder prefix and delimiter must be set by hand (mailboxes.delimiter)"},
		} {
			if ic.Has(c.name) {
				have = append(have, c.name)
			} else {
				missing = append(missing, c.name+" ("+c.without+")")
			}
		}
		for _, s := range caps {
			if strings.HasPrefix(strings.ToUpper(s), "AUTH=") {
				have = append(have, s)
			}
		}
		detail := fmt.Sprintf("%s as %s: logged in; has %s", imapCfg.Address, u.Login, strings.Join(have, ", "))
		if len(missing) > 0 {
			detail += "; lacks " + strings.Join(missing, "; ")
		}
		add("IMAP login", true, "%s", detail)
		if ic.Has("NAMESPACE") {
			prefix, delim, ok, err := ic.PersonalNamespace(ctx)
			switch {
			case err != nil:
				add("IMAP namespace", false, "NAMESPACE failed: %v", err)
			case !ok:
				add("IMAP namespace", true, "no personal namespace announced")
			default:
				ok, detail := folderFit(cfg, prefix, delim)
				add("IMAP namespace", ok, "%s", detail)
			}
		}
		_ = ic.Logout(ctx)
	}

	// SMTP submission: connect (banner, EHLO, STARTTLS, AUTH as configured).
	sc, err := smtpConnect(ctx, smtpCfg, u)
	if err != nil {
		add("SMTP submission", false, "%s: %v; %s", smtpCfg.Address, err, smtpFault(cfg, err))
		return res, nil
	}
	defer sc.Close()
	var exts []string
	for _, e := range []string{"STARTTLS", "AUTH", "PIPELINING", "8BITMIME", "SIZE"} {
		if ok, param := sc.Extension(e); ok {
			exts = append(exts, strings.TrimSpace(e+" "+param))
		}
	}
	add("SMTP submission", true, "%s: connected; EHLO offers %s", smtpCfg.Address, orNone(strings.Join(exts, ", ")))

	// One message to the remote domain, through the server, to a sink of
	// our own: the relay the run depends on.
	if !cfg.Sink.Enabled {
		add("relay to the sink", true, "sink.enabled = false: not checked")
		return res, nil
	}
	arrived := make(chan delivery.Arrival, 1)
	id := delivery.NewID(session.NewRunID(), 1)
	sink, _, err := startSink(cfg, nil, func(s string) bool { return s == id }, func(a delivery.Arrival) {
		select {
		case arrived <- a:
		default:
		}
	})
	if err != nil {
		add("relay to the sink", false, "cannot listen on %s (%s): %v", cfg.Sink.Listen, cfg.Where("sink.listen"), err)
		return res, nil
	}
	// Shut down gracefully: a relay whose 250 is being written when the
	// probe ends gets it, instead of an EOF that makes the server retry
	// the message later, into some run's sink.
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), probeSinkShutdown)
		defer cancel()
		if sink.Shutdown(sctx) != nil {
			sink.Close()
		}
	}()
	gen, err := message.NewGenerator(cfg.Seed, []int{1024})
	if err != nil {
		return nil, err
	}
	to := "probe@" + cfg.Users.RemoteDomain
	env := message.Envelope{ID: id, From: u.Address, To: []string{to}, Subject: "mailbench probe", Sent: time.Now()}
	_, err = sc.Send(ctx, u.Address, []string{to}, gen.Source(env, 1024, 0))
	accepted := time.Now() // the relay time runs from the server's acceptance, not from QUIT
	if err != nil {
		add("relay to the sink", false, "the server refused a message to %s: %v; it must accept mail for users.remote_domain (%s) and relay it to sink.listen (%s)",
			to, err, cfg.Where("users.remote_domain"), cfg.Where("sink.listen"))
		return res, nil
	}
	_ = sc.Quit(ctx)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a := <-arrived:
		add("relay to the sink", true, "a message to %s reached the sink at %s %v after the server accepted it", to, sink.Addr(), a.Received.Sub(accepted).Round(time.Millisecond))
	case <-t.C:
		add("relay to the sink", false, "the server accepted a message to %s but it did not reach the sink at %s within %v: the server's relay of users.remote_domain (%s) to sink.listen (%s) is the likely fault",
			to, sink.Addr(), wait, cfg.Where("users.remote_domain"), cfg.Where("sink.listen"))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return res, nil
}

func orNone(s string) string {
	if s == "" {
		return "nothing beyond plain SMTP"
	}
	return s
}

// imapFault names the config keys to look at for an IMAP connect failure.
func imapFault(cfg *workload.Config, err error) string {
	switch measure.Classify(err) {
	case measure.Auth:
		if cfg.Users.File != "" {
			return "the server refused the login: check the users file (" + cfg.Where("users.file") + ")"
		}
		return "the server refused the login: check users.pattern, users.password / users.password_env (" + cfg.Where("users.password_env") + ") and users.login_with_domain"
	case measure.TLS:
		return "TLS failed: check " + cfg.Where("target.imap.tls") + ", target.imap.ca_file and target.imap.server_name"
	case measure.Timeout:
		return "no answer in time: check " + cfg.Where("target.imap.address") + " and load.op_timeout"
	case measure.Connection:
		return "no IMAP server there: check " + cfg.Where("target.imap.address")
	}
	return "check " + cfg.Where("target.imap")
}

// smtpFault names the config keys to look at for an SMTP connect failure.
func smtpFault(cfg *workload.Config, err error) string {
	switch measure.Classify(err) {
	case measure.Auth:
		return "the server refused SMTP AUTH: check " + cfg.Where("target.smtp.auth") + " and the users' passwords"
	case measure.TLS:
		return "TLS failed: check " + cfg.Where("target.smtp.tls") + ", target.smtp.ca_file and target.smtp.server_name"
	case measure.Timeout:
		return "no answer in time: check " + cfg.Where("target.smtp.address")
	case measure.Connection:
		return "no SMTP server there: check " + cfg.Where("target.smtp.address")
	}
	return "check " + cfg.Where("target.smtp")
}

// smtpConnect opens the submission connection as user u (AUTH with u's
// credentials when the config asks for it).
func smtpConnect(ctx context.Context, c smtpclient.Config, u workload.User) (*smtpclient.Client, error) {
	c.Username, c.Password = u.Login, u.Password
	return smtpclient.Connect(ctx, c)
}

// folderFit says whether the configured folders fit the server's personal
// namespace (prefix and delimiter) and, when they do not, what they should
// be.
func folderFit(cfg *workload.Config, prefix, delim string) (bool, string) {
	mb := cfg.Mailboxes
	if mb.Auto() {
		in := mb.InNamespace(prefix, delim)
		return true, fmt.Sprintf("personal namespace %q, delimiter %q; with %s = \"auto\" the folders will be %s",
			prefix, in.Delimiter, cfg.Where("mailboxes.delimiter"), strings.Join(append(in.Standard(), in.Folders...), ", "))
	}
	names := append(mb.Standard(), mb.Folders...)
	var wrong, fixed []string
	for _, n := range names {
		if prefix != "" && !strings.HasPrefix(n, prefix) {
			wrong = append(wrong, n)
			fixed = append(fixed, prefix+strings.ReplaceAll(n, mb.Delimiter, delim))
		}
	}
	ns := fmt.Sprintf("personal namespace %q, delimiter %q", prefix, delim)
	switch {
	case delim != "" && mb.Delimiter != delim:
		return false, fmt.Sprintf("%s, but %s is %q: set it to %q and write the folders with it", ns, cfg.Where("mailboxes.delimiter"), mb.Delimiter, delim)
	case len(wrong) > 0:
		return false, fmt.Sprintf("%s: the folders %s are outside it (the server will refuse to create them); they should be %s (%s and mailboxes.sent/drafts/trash)",
			ns, strings.Join(wrong, ", "), strings.Join(fixed, ", "), cfg.Where("mailboxes.folders"))
	}
	return true, ns + ": the configured folders fit it"
}
