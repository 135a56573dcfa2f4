package main

import (
	"bytes"
	"strings"
	"testing"
)

// --users overrides users.count for every command that loads a workload,
// and is not a flag of the others.
func TestUsersOverride(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"check", "quick", "--users", "7"}, 0, "users:       7\n"},
		{[]string{"check", "--users", "400", "dovecot-postfix"}, 0, "users:       400\n"},
		{[]string{"run", "--users", "400", "--measurement", "0", "quick"}, 2, "--measurement 0s: out of range"},
		// --users is a flag of the commands that load a workload only.
		{[]string{"--users", "400", "check", "dovecot-postfix"}, 2, "unknown flag --users"},
		{[]string{"sink", "--users", "4"}, 2, "unknown flag --users"},
		{[]string{"report", "--users", "4", "x.json"}, 2, "unknown flag --users"},
		{[]string{"check", "quick", "--users=-3"}, 2, "--users -3: out of range: must be 1 to 10000000"},
	} {
		var out, errb bytes.Buffer
		code := realMain(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.contains) {
			t.Errorf("%v: exit %d (want %d), output lacks %q:\n%s%s", tc.args, code, tc.code, tc.contains, out.String(), errb.String())
		}
	}
}
