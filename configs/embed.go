// Package configs ships mailbench's workload files inside the binary, so that
// `mailbench run` works from anywhere: a name like "quick" selects
// configs/quick.toml.
package configs

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.toml
var files embed.FS

// Lookup returns the shipped config called name ("quick" or "quick.toml").
func Lookup(name string) ([]byte, bool) {
	if !strings.HasSuffix(name, ".toml") {
		name += ".toml"
	}
	b, err := files.ReadFile(name)
	return b, err == nil
}

// Names lists the shipped configs without their .toml suffix.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".toml"))
	}
	sort.Strings(out)
	return out
}
