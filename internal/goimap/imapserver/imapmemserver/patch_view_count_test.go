package imapmemserver_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var fetchUIDOnly = regexp.MustCompile(`^\* \d+ FETCH \(UID (\d+)\)$`)

// view-count.patch: "*" in a sequence set is the client's last message,
// also when another session has expunged messages this client has not
// been told about yet (they are reported after the command, with its
// EXPUNGE responses).
func TestPatchViewCountStarAfterOthersExpunge(t *testing.T) {
	l := startCorkServer(t)
	reader := dialScript(t, l)
	reader.command("a", "LOGIN u p")
	for i := range 3 {
		reader.appendMessage(fmt.Sprintf("b%d", i), fmt.Sprintf("Subject: %d\r\n\r\n", i))
	}
	reader.command("c", "SELECT INBOX") // 3 messages, UIDs 1-3

	cleaner := dialScript(t, l)
	cleaner.command("a", "LOGIN u p")
	cleaner.command("b", "SELECT INBOX")
	cleaner.command("c", "STORE 1 +FLAGS.SILENT (\\Deleted)")
	cleaner.command("d", "EXPUNGE")

	for _, tc := range []struct {
		set      string
		wantUIDs []string
	}{
		// The client still numbers 1-3; message 1 is gone, 2 and 3 are not.
		{"1:*", []string{"UID 2", "UID 3"}},
		{"3:*", []string{"UID 3"}},
		{"*", []string{"UID 3"}},
	} {
		lines := reader.command("d", "FETCH "+tc.set+" (UID)")
		var got []string
		for _, line := range lines {
			// The answers, not the flag update of message 1 reported after them.
			if m := fetchUIDOnly.FindStringSubmatch(line); m != nil {
				got = append(got, "UID "+m[1])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.wantUIDs) {
			t.Errorf("FETCH %s (UID) after another session's EXPUNGE: %q, want %q", tc.set, lines, tc.wantUIDs)
		}
	}
	// After a command that may report it, the expunge is reported and the
	// client numbers 1-2.
	lines := reader.command("e", "NOOP")
	if fmt.Sprint(lines[:len(lines)-1]) != "[* 1 EXPUNGE]" {
		t.Errorf("NOOP: %q, want the EXPUNGE of message 1", lines)
	}
	lines = reader.command("f", "FETCH 1:* (UID)")
	if len(lines) != 3 || !strings.Contains(lines[0], "UID 2") || !strings.Contains(lines[1], "UID 3") {
		t.Errorf("FETCH 1:* after the EXPUNGE: %q, want UIDs 2 and 3 as messages 1 and 2", lines)
	}
}

// fetch-view.patch: a UID FETCH whose set reaches a message appended since
// the client's last update leaves it out (it has no sequence number the
// client knows) instead of answering "* 0 FETCH"; the EXISTS at the end of
// the command reports it, and the next UID FETCH returns it.
func TestPatchFetchViewUIDSetBeyondTheView(t *testing.T) {
	l := startCorkServer(t)
	reader := dialScript(t, l)
	reader.command("a", "LOGIN u p")
	reader.appendMessage("b", "Subject: 1\r\n\r\n")
	reader.command("c", "SELECT INBOX") // 1 message, UID 1

	other := dialScript(t, l)
	other.command("a", "LOGIN u p")
	other.appendMessage("b", "Subject: 2\r\n\r\n")

	lines := reader.command("d", "UID FETCH 1:* (UID)")
	if fmt.Sprint(lines[:len(lines)-1]) != "[* 1 FETCH (UID 1) * 2 EXISTS]" {
		t.Errorf("UID FETCH 1:* with UID 2 not yet reported: %q, want message 1, then * 2 EXISTS", lines)
	}
	lines = reader.command("e", "UID FETCH 1:* (UID)")
	if fmt.Sprint(lines[:len(lines)-1]) != "[* 1 FETCH (UID 1) * 2 FETCH (UID 2)]" {
		t.Errorf("UID FETCH 1:* after the EXISTS: %q, want both", lines)
	}
}
