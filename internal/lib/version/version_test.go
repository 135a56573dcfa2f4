package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
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
		if got := format(&tt.bi, ""); got != tt.want {
			t.Errorf("format(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
	if String() == "" {
		t.Error("String() is empty")
	}
}

// TestReleaseWins: the release build's -X value is the version, with the
// VCS facts kept beside it.
func TestReleaseWins(t *testing.T) {
	bi := debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}}}
	if got := format(&bi, "v0.3.0"); got != "v0.3.0 (rev 0123456789ab)" {
		t.Errorf("format with a release = %q", got)
	}
}

// TestLdflagsSetTheVersion builds the CLI as the release does (-ldflags -X)
// and checks that `mailbench version` prints the release's version: the -X
// must reach the string every report carries.
func TestLdflagsSetTheVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mailbench")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin,
		"-ldflags", "-X github.com/mailbench/mailbench/internal/lib/version.Release=v9.8.7-test", "../../../cmd/mailbench")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=schedtrace=0") // no runtime re-execution for this
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "mailbench v9.8.7-test") {
		t.Errorf("mailbench version printed %q", out)
	}
}
