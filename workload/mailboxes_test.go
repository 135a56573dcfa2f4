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
