package endpoints

import (
	"context"
	"errors"
	"fmt"
	"github.com/mailbench/mailbench/internal/lib/ctxsleep"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/workload"
)

// ResolveNamespace places the folders of a mailboxes.delimiter = "auto"
// config in the server's personal namespace: it logs in as the first user,
// asks NAMESPACE (RFC 2342) and returns a copy of cfg whose mailboxes are
// workload.MailboxesConfig.InNamespace of the answer, with a line saying
// what was found ("personal namespace \"INBOX.\", delimiter \".\": ...").
// The embedded target's namespace is "" with "/". Any other config is
// returned as it is, without I/O, and an empty line.
func ResolveNamespace(ctx context.Context, cfg *workload.Config) (*workload.Config, string, error) {
	if !cfg.Mailboxes.Auto() {
		return cfg, "", nil
	}
	prefix, delim := "", "/"
	if !cfg.Target.Embedded {
		users, err := cfg.LoadUsers()
		if err != nil {
			return nil, "", err
		}
		if len(users) == 0 {
			return nil, "", errors.New("mailboxes.delimiter = \"auto\": no user to ask the server's namespace with")
		}
		e, err := For(cfg)
		if err != nil {
			return nil, "", err
		}
		ic := e.IMAP
		u := users[0]
		// A LOGIN refused for a reason that may pass (a contended server's
		// bare NO) is tried again, as init and clean try a user again.
		c, err := imapclient.Connect(ctx, ic, u.Login, u.Password)
		for attempt := 0; err != nil && attempt < namespaceRetries && imapclient.TemporaryRefusal(err); attempt++ {
			if !ctxsleep.Sleep(ctx, namespaceRetryPause<<attempt) {
				break
			}
			c, err = imapclient.Connect(ctx, ic, u.Login, u.Password)
		}
		if err != nil && imapclient.TemporaryRefusal(err) {
			err = fmt.Errorf("%w (refused %d times for a reason that may pass: the server is contended or still starting)", err, namespaceRetries+1)
		}
		if err != nil {
			return nil, "", fmt.Errorf("mailboxes.delimiter = \"auto\": connect to %s as %s to ask its namespace: %w", ic.Address, u.Login, err)
		}
		defer c.Close()
		p, d, ok, err := c.PersonalNamespace(ctx)
		switch {
		case err != nil:
			return nil, "", fmt.Errorf("mailboxes.delimiter = \"auto\": NAMESPACE (RFC 2342) failed on %s: %w; set %s to the server's delimiter and write the folders in its namespace",
				ic.Address, err, cfg.Where("mailboxes.delimiter"))
		case !ok:
			return nil, "", fmt.Errorf("mailboxes.delimiter = \"auto\": %s has no personal namespace; set %s and the folder names by hand",
				ic.Address, cfg.Where("mailboxes.delimiter"))
		}
		prefix, delim = p, d
		_ = c.Logout(ctx) // the answer is in; a failed logout changes nothing
	}
	out := *cfg
	out.Mailboxes = cfg.Mailboxes.InNamespace(prefix, delim)
	mb := out.Mailboxes
	line := fmt.Sprintf("personal namespace %q, delimiter %q: folders %s, %s, %s", prefix, mb.Delimiter, mb.Sent, mb.Drafts, mb.Trash)
	for _, f := range mb.Folders {
		line += ", " + f
	}
	return &out, line, nil
}

// namespaceRetryPause is the first pause before the namespace probe's
// LOGIN is tried again (then doubled): the probe is one connection, not a
// crowd of them, so it waits less than init's users (DefaultRetryPause).
const namespaceRetryPause = 250 * time.Millisecond

// namespaceRetries is how many times the probe's LOGIN is tried again when
// refused for a reason that may pass, as init and clean try a user again.
const namespaceRetries = 2
