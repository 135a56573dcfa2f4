package imapclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// cyrusLike answers as Cyrus IMAP does: CREATE of an existing mailbox and
// DELETE or SELECT of a missing one get a plain NO without RFC 5530's
// [ALREADYEXISTS] / [NONEXISTENT]; LIST shows what exists.
func cyrusLike(existing map[string]bool) fakeScript {
	return func(cmd string) (string, fakeAction) {
		verb, raw, _ := strings.Cut(cmd, " ")
		arg := strings.Trim(raw, `"`)
		switch strings.ToUpper(verb) {
		case "LOGIN":
			return "%[1]s OK [CAPABILITY IMAP4rev1] logged in\r\n", reply
		case "CAPABILITY":
			return "* CAPABILITY IMAP4rev1\r\n%[1]s OK done\r\n", reply
		case "CREATE":
			if existing[arg] {
				return "%[1]s NO Mailbox already exists\r\n", reply
			}
			if arg == "Forbidden" {
				return "%[1]s NO Permission denied\r\n", reply
			}
			existing[arg] = true
			return "%[1]s OK Completed\r\n", reply
		case "DELETE":
			if !existing[arg] {
				return "%[1]s NO Mailbox does not exist\r\n", reply
			}
			delete(existing, arg)
			return "%[1]s OK Completed\r\n", reply
		case "SELECT":
			if !existing[arg] {
				return "%[1]s NO Mailbox does not exist\r\n", reply
			}
			return "* 0 EXISTS\r\n* OK [UIDVALIDITY 1] ok\r\n%[1]s OK [READ-WRITE] Completed\r\n", reply
		case "LIST":
			f := strings.Fields(raw)
			name := strings.Trim(f[len(f)-1], `"`)
			if existing[name] {
				return `* LIST () "." "` + name + "\"\r\n%[1]s OK Completed\r\n", reply
			}
			return "%[1]s OK Completed\r\n", reply
		case "LOGOUT":
			return "* BYE\r\n%[1]s OK Completed\r\n", hangUp
		}
		return "%[1]s BAD unknown\r\n", reply
	}
}

// TestIdempotentWithoutResponseCodes: against a server that gives no
// [ALREADYEXISTS] or [NONEXISTENT] (Cyrus), creating what exists and
// deleting or emptying what does not are decided from LIST, so init and
// clean can run twice; a real refusal stays an error.
func TestIdempotentWithoutResponseCodes(t *testing.T) {
	existing := map[string]bool{"INBOX": true, "Archive": true}
	fs := startFake(t, fakeGreeting, cyrusLike(existing))
	ctx := context.Background()
	c, err := Connect(ctx, Config{Address: fs.addr, Timeout: 2 * time.Second}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Create(ctx, "Archive"); err != nil {
		t.Errorf("Create of an existing mailbox: %v (commands %q)", err, fs.seen())
	}
	if err := c.Create(ctx, "Forbidden"); err == nil {
		t.Error("Create refused for another reason counted as success")
	}
	if err := c.DeleteMailbox(ctx, "Nope"); err != nil {
		t.Errorf("DeleteMailbox of a missing mailbox: %v", err)
	}
	if _, err := c.EmptyMailbox(ctx, "Nope"); !errors.Is(err, ErrNoMailbox) {
		t.Errorf("EmptyMailbox of a missing mailbox: %v, want ErrNoMailbox", err)
	}
	if err := c.DeleteMailbox(ctx, "Archive"); err != nil || existing["Archive"] {
		t.Errorf("DeleteMailbox of an existing mailbox: %v (still there: %v)", err, existing["Archive"])
	}
}
