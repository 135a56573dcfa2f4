package workload

import (
	"strings"
	"testing"
)

func TestMailboxNames(t *testing.T) {
	base := "[target]\nembedded = true\n[mailboxes]\n"
	for _, tc := range []struct {
		name, toml string
		wantErr    string // "" for none
	}{
		{"defaults", "", ""},
		{"Exchange-style names", `sent = "Sent Items"` + "\n" + `trash = "Deleted Items"`, ""},
		{"Courier-style hierarchy", `delimiter = "."` + "\n" + `sent = "INBOX.Sent"` + "\n" + `drafts = "INBOX.Drafts"` + "\n" + `trash = "INBOX.Trash"` + "\n" + `folders = ["INBOX.Projects", "INBOX.Projects.Alpha"]`, ""},
		{"sent is INBOX", `sent = "inbox"`, "m.toml:4: mailboxes.sent: cannot be INBOX"},
		{"two names alike", `drafts = "Sent"`, `m.toml:4: mailboxes.drafts: "Sent" names another standard mailbox too`},
		{"long delimiter", `delimiter = "::"`, `m.toml:4: mailboxes.delimiter: must be one character`},
		{"folder repeats a standard name", `sent = "Outbox"` + "\n" + `folders = ["Outbox"]`, `m.toml:5: mailboxes.folders[0]: "Outbox" is always created`},
		{"name ends in the delimiter", `delimiter = "."` + "\n" + `folders = ["Projects."]`, `m.toml:5: mailboxes.folders[0]: must be a mailbox name like "Projects.Alpha"`},
		{"auto, names with /", `delimiter = "auto"` + "\n" + `folders = ["Projects", "Projects/Alpha"]`, ""},
		{"auto, a name ending in /", `delimiter = "auto"` + "\n" + `folders = ["Projects/"]`, `m.toml:5: mailboxes.folders[0]: must be a mailbox name like "Projects/Alpha"`},
		{"auto is the only word", `delimiter = "automatic"`, `m.toml:4: mailboxes.delimiter: must be one character such as "/" or ".", or "auto"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig("m.toml", []byte(base+tc.toml+"\n"))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr == "" && len(c.Mailboxes.Standard()) != 3:
				t.Fatalf("standard mailboxes %v", c.Mailboxes.Standard())
			}
		})
	}
}

func TestInNamespace(t *testing.T) {
	auto := MailboxesConfig{Sent: "Sent", Drafts: "Drafts", Trash: "Trash", Folders: []string{"Archive", "Projects", "Projects/Alpha"}, Delimiter: AutoDelimiter}
	for _, tc := range []struct {
		name          string
		m             MailboxesConfig
		prefix, delim string
		want          []string // Sent, Drafts, Trash, then the folders
		wantDelim     string
	}{
		{"Cyrus and Courier: INBOX. with .", auto, "INBOX.", ".", []string{"INBOX.Sent", "INBOX.Drafts", "INBOX.Trash", "INBOX.Archive", "INBOX.Projects", "INBOX.Projects.Alpha"}, "."},
		{"Dovecot's default: no prefix, /", auto, "", "/", []string{"Sent", "Drafts", "Trash", "Archive", "Projects", "Projects/Alpha"}, "/"},
		{"Dovecot with a . separator", auto, "", ".", []string{"Sent", "Drafts", "Trash", "Archive", "Projects", "Projects.Alpha"}, "."},
		{"already prefixed names stay", MailboxesConfig{Sent: "INBOX/Sent", Drafts: "Drafts", Trash: "Trash", Delimiter: AutoDelimiter}, "INBOX.", ".", []string{"INBOX.Sent", "INBOX.Drafts", "INBOX.Trash"}, "."},
		{"a flat namespace (NIL delimiter)", auto, "", "", []string{"Sent", "Drafts", "Trash", "Archive", "Projects", "Projects/Alpha"}, "/"},
		{"not auto: unchanged", MailboxesConfig{Sent: "Sent", Drafts: "Drafts", Trash: "Trash", Delimiter: "/"}, "INBOX.", ".", []string{"Sent", "Drafts", "Trash"}, "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.m.InNamespace(tc.prefix, tc.delim)
			names := append(got.Standard(), got.Folders...)
			if strings.Join(names, ",") != strings.Join(tc.want, ",") || got.Delimiter != tc.wantDelim {
				t.Errorf("%v with %q, want %v with %q", names, got.Delimiter, tc.want, tc.wantDelim)
			}
		})
	}
	if auto.Folders[2] != "Projects/Alpha" || auto.Delimiter != AutoDelimiter {
		t.Error("InNamespace changed its receiver's folders")
	}
}
