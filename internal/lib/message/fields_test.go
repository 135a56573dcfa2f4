package message

import (
	"strings"
	"testing"
)

func TestFieldNameIs(t *testing.T) {
	for _, tc := range []struct {
		b, name string
		want    bool
	}{
		{"X-Mailbench-Id", HeaderID, true},
		{"x-mailbench-id", HeaderID, true},
		{"X-MAILBENCH-SENT", HeaderSent, true},
		{"X-Mailbench-I", HeaderID, false},
		{"X-Mailbench-Idx", HeaderID, false},
		{"X-Mailbench_Id", HeaderID, false},
		{"", "", true},
		{"[", "{", false}, // '[' and '{' differ by 0x20 but are no letters
		{"@", "`", false},
	} {
		if got := FieldNameIs([]byte(tc.b), tc.name); got != tc.want {
			t.Errorf("FieldNameIs(%q, %q) = %v, want %v", tc.b, tc.name, got, tc.want)
		}
		if tc.want != strings.EqualFold(tc.b, tc.name) {
			t.Errorf("%q, %q: the table disagrees with strings.EqualFold", tc.b, tc.name)
		}
	}
}
