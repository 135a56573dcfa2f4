package version

import (
	"runtime/debug"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{}, "devel"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, "v0.2.0"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "06af185abcdef0123456789"}, {Key: "vcs.time", Value: "2026-12-01T02:42:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "v0.2.0 (rev 06af185abcde, 2026-12-01T02:42:00Z)"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "06af185"}, {Key: "vcs.modified", Value: "true"},
		}}, "devel (rev 06af185, modified)"},
	} {
		if got := format(&tt.bi); got != tt.want {
			t.Errorf("format(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
	if String() == "" {
		t.Error("String() is empty")
	}
}
