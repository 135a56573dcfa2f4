package main

import (
	"bytes"
	"strings"
	"testing"
)

// --users overrides users.count for every command that loads a workload.
func TestUsersOverride(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"check", "quick", "--users", "7"}, 0, "users:       7\n"},
		{[]string{"--users", "400", "check", "dovecot-postfix"}, 0, "users:       400\n"},
		{[]string{"check", "quick", "--users=-3"}, 2, "--users -3: must be > 0"},
	} {
		var out, errb bytes.Buffer
		code := realMain(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.contains) {
			t.Errorf("%v: exit %d (want %d), output lacks %q:\n%s%s", tc.args, code, tc.code, tc.contains, out.String(), errb.String())
		}
	}
}
