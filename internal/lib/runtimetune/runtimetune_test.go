package runtimetune

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []string
		want   []string
		reexec bool
	}{
		{"no GODEBUG", []string{"A=1", "PATH=/bin"}, []string{"A=1", "PATH=/bin", "GODEBUG=" + Setting}, true},
		{"other settings kept", []string{"GODEBUG=gctrace=1,madvdontneed=1", "A=1"}, []string{"A=1", "GODEBUG=gctrace=1,madvdontneed=1," + Setting}, true},
		{"empty GODEBUG", []string{"GODEBUG="}, []string{"GODEBUG=" + Setting}, true},
		{"already set by us", []string{"GODEBUG=" + Setting}, nil, false},
		{"user's own value", []string{"GODEBUG=gctrace=1,schedtrace=1000"}, nil, false},
		{"user turned it off", []string{"GODEBUG=schedtrace=0"}, nil, false},
		{"last GODEBUG counts", []string{"GODEBUG=schedtrace=0", "GODEBUG=gctrace=1"}, []string{"GODEBUG=gctrace=1," + Setting}, true},
		{"a longer name is not schedtrace", []string{"GODEBUG=schedtraceX=1"}, []string{"GODEBUG=schedtraceX=1," + Setting}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Env(tc.in)
			if ok != tc.reexec || !slices.Equal(got, tc.want) {
				t.Fatalf("Env(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.reexec)
			}
		})
	}
}

// TestApplyReexecutes runs this test binary as a child that calls Apply and
// prints the GODEBUG it ends up with: the child must have re-executed itself
// once with the setting, and keep the user's other settings.
func TestApplyReexecutes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Apply re-executes on Linux only")
	}
	if os.Getenv("RUNTIMETUNE_CHILD") == "1" {
		Apply()
		os.Stdout.WriteString("GODEBUG=" + os.Getenv("GODEBUG") + "\n")
		os.Exit(0)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "GODEBUG=" + Setting},
		{"gctrace=0", "GODEBUG=gctrace=0," + Setting},
		{"schedtrace=0", "GODEBUG=schedtrace=0"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestApplyReexecutes$")
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") }),
			"RUNTIMETUNE_CHILD=1", "GODEBUG="+tc.in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child with GODEBUG=%q: %v", tc.in, err)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("child with GODEBUG=%q ended with %q, want %q", tc.in, got, tc.want)
		}
	}
}
