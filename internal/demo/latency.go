package demo

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
)

// LatencyCommands are the keys Options.Latency accepts: IMAP commands (UID
// forms apart) and SMTP transaction steps. The delay is added before the
// target handles the command, so a client sees its reply D later.
var LatencyCommands = []string{
	"LOGIN", "SELECT", "LIST", "APPEND", "FETCH", "UID FETCH", "STORE", "UID STORE", "EXPUNGE", // IMAP
	"MAIL", "RCPT", "DATA", // SMTP (DATA: after the message is read, before the reply)
}

// maxLatency bounds a latency knob: it is a test device, not a stall.
const maxLatency = time.Minute

// checkLatency validates o.Latency: known commands (upper-cased), delays in
// [0, maxLatency].
func checkLatency(o *Options) error {
	if len(o.Latency) == 0 {
		return nil
	}
	norm := make(map[string]time.Duration, len(o.Latency))
	for k, d := range o.Latency {
		key := strings.ToUpper(strings.TrimSpace(k))
		if !slices.Contains(LatencyCommands, key) {
			return fmt.Errorf("target: latency for %q: not one of %s", k, strings.Join(LatencyCommands, ", "))
		}
		if d < 0 || d > maxLatency {
			return fmt.Errorf("target: latency for %q: %v outside [0, %v]", k, d, maxLatency)
		}
		norm[key] = d
	}
	o.Latency = norm
	return nil
}

// commandDelay waits Options.Contention's delay, then sleeps the latency
// configured for cmd, if any.
func (t *Target) commandDelay(cmd string) {
	t.contentionDelay()
	if d := t.opts.Latency[cmd]; d > 0 {
		time.Sleep(d)
	}
}

// The IMAP commands with a latency knob. imapSession embeds the memory
// server's session; these wrap its methods.

func (s *imapSession) Select(mailbox string, options *imap.SelectOptions) (*imap.SelectData, error) {
	s.t.commandDelay("SELECT")
	return s.UserSession.Select(mailbox, options)
}

func (s *imapSession) List(w *imapserver.ListWriter, ref string, patterns []string, options *imap.ListOptions) error {
	s.t.commandDelay("LIST")
	return s.UserSession.List(w, ref, patterns, options)
}

func (s *imapSession) Append(mailbox string, r imap.LiteralReader, options *imap.AppendOptions) (*imap.AppendData, error) {
	s.t.commandDelay("APPEND")
	return s.UserSession.Append(mailbox, r, options)
}

func (s *imapSession) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, options *imap.FetchOptions) error {
	s.t.commandDelay(uidForm(numSet, "FETCH"))
	return s.UserSession.Fetch(w, numSet, options)
}

func (s *imapSession) Store(w *imapserver.FetchWriter, numSet imap.NumSet, flags *imap.StoreFlags, options *imap.StoreOptions) error {
	s.t.commandDelay(uidForm(numSet, "STORE"))
	return s.UserSession.Store(w, numSet, flags, options)
}

func (s *imapSession) Expunge(w *imapserver.ExpungeWriter, uids *imap.UIDSet) error {
	s.t.commandDelay("EXPUNGE")
	return s.UserSession.Expunge(w, uids)
}

// uidForm is "UID "+cmd when numSet holds UIDs.
func uidForm(numSet imap.NumSet, cmd string) string {
	if _, ok := numSet.(imap.UIDSet); ok {
		return "UID " + cmd
	}
	return cmd
}
