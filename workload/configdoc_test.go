package workload

import (
	"encoding"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestConfigDoc checks docs/config.md against the config model: every key
// of the model (a leaf of Config's toml tags) is documented in a table row
// of its section, and every documented key exists in the model.
func TestConfigDoc(t *testing.T) {
	data, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]bool{} // every key path, tables included
	var leaves []string
	var walk func(prefix string, typ reflect.Type)
	text := reflect.TypeFor[encoding.TextUnmarshaler]()
	walk = func(prefix string, typ reflect.Type) {
		for f := range typ.Fields() {
			tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			path := prefix + tag
			model[path] = true
			if f.Type.Kind() == reflect.Struct && !reflect.PointerTo(f.Type).Implements(text) {
				walk(path+".", f.Type)
				continue
			}
			// A table of named tables ([profiles.users.NAME]): documented
			// under a NAME section (compliance.functions is documented whole).
			if f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct && strings.HasPrefix(path, "profiles.") {
				walk(path+".NAME.", f.Type.Elem())
				continue
			}
			leaves = append(leaves, path)
		}
	}
	walk("", reflect.TypeFor[Config]())

	documented := map[string]bool{}
	section := regexp.MustCompile("`\\[([^\\]]+)\\]`")
	key := regexp.MustCompile("`([^`]+)`")
	prefixes := []string{""}
	for line := range strings.Lines(string(data)) {
		switch {
		case strings.HasPrefix(line, "#"):
			prefixes = nil
			for _, m := range section.FindAllStringSubmatch(line, -1) {
				if p, ok := strings.CutSuffix(m[1], ".<type>"); ok {
					for _, k := range []string{"check", "read", "cleanup", "folders", "send"} {
						prefixes = append(prefixes, p+"."+k+".")
					}
					continue
				}
				prefixes = append(prefixes, m[1]+".")
			}
			if strings.HasPrefix(line, "## Top level") {
				prefixes = []string{""}
			}
		case strings.HasPrefix(line, "| `") && prefixes != nil:
			cell := strings.Split(line, "|")[1]
			for _, m := range key.FindAllStringSubmatch(cell, -1) {
				k, _, _ := strings.Cut(m[1], ".\"") // functions."<name>"
				for _, p := range prefixes {
					documented[p+k] = true
				}
			}
		}
	}
	for _, k := range leaves {
		if !documented[k] {
			t.Errorf("config key %s is not documented in docs/config.md", k)
		}
	}
	var extra []string
	for k := range documented {
		if !model[k] && !strings.HasSuffix(k, ".toml") { // the shipped-files table
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		t.Errorf("docs/config.md documents %s, which is not a config key", k)
	}
	if len(leaves) < 50 {
		t.Errorf("only %d config keys found: the walk is broken", len(leaves))
	}
}
