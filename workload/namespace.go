package workload

import "strings"

// AutoDelimiter is the mailboxes.delimiter value that asks the server: the
// folder names (mailboxes.folders, sent, drafts, trash) are then written
// with "/" as their hierarchy separator and relative to the server's
// personal namespace (RFC 2342), and are placed in it before any work
// (InNamespace; endpoints.ResolveNamespace asks the server).
const AutoDelimiter = "auto"

// Auto reports whether m's names are relative to the server's personal
// namespace (delimiter = "auto").
func (m MailboxesConfig) Auto() bool { return m.Delimiter == AutoDelimiter }

// NameDelimiter is the hierarchy separator m's names are written with: "/"
// for delimiter = "auto", the delimiter otherwise.
func (m MailboxesConfig) NameDelimiter() string {
	if m.Auto() {
		return "/"
	}
	return m.Delimiter
}

// InNamespace returns m with its names placed in a personal namespace of
// the given prefix and hierarchy delimiter ("INBOX." and "." on Cyrus and
// Courier, "" and "/" on Dovecot's default): "/" in each name becomes delim,
// and prefix is prepended unless the name already starts with it. Only a
// delimiter = "auto" m is changed (a copy); any other is returned as it is.
// It doesn't perform I/O.
func (m MailboxesConfig) InNamespace(prefix, delim string) MailboxesConfig {
	if !m.Auto() {
		return m
	}
	if delim == "" {
		delim = "/" // a flat namespace (NIL delimiter): names stay as written
	}
	place := func(n string) string {
		n = strings.ReplaceAll(n, "/", delim)
		if prefix != "" && !strings.HasPrefix(n, prefix) {
			n = prefix + n
		}
		return n
	}
	r := m
	r.Delimiter = delim
	r.Sent, r.Drafts, r.Trash = place(m.Sent), place(m.Drafts), place(m.Trash)
	r.Folders = make([]string, len(m.Folders))
	for i, f := range m.Folders {
		r.Folders[i] = place(f)
	}
	return r
}
