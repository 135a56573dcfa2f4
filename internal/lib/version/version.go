// Package version is mailbench's version, from the build: the module
// version and the VCS revision, time and modified flag that the go command
// stamps into the binary (runtime/debug.ReadBuildInfo). `mailbench version`
// prints it and every report carries it (orchestrator.Version).
package version

import (
	"runtime/debug"
	"strings"
)

// Release is the release's version, set by the release build with
//
//	go build -ldflags "-X github.com/mailbench/mailbench/internal/lib/version.Release=v0.3.0" ./cmd/mailbench
//
// (the Dockerfile and scripts/release do); "" in other builds, whose
// version comes from the module (go install …@v0.3.0) or says devel.
var Release string

// String is the version of the running binary, e.g.
// "v0.2.0 (rev 06af185abcde, 2026-12-01T02:42:00Z)" or
// "devel (rev 06af185abcde, 2026-12-01T02:42:00Z, modified)"; "devel"
// when the build carries no information.
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if Release != "" {
			return Release
		}
		return "devel"
	}
	return format(bi, Release)
}

func format(bi *debug.BuildInfo, release string) string {
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if release != "" {
		v = release
	}
	var rev, at string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		parts = append(parts, "rev "+rev)
	}
	if at != "" {
		parts = append(parts, at)
	}
	if modified {
		parts = append(parts, "modified")
	}
	if len(parts) == 0 {
		return v
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
