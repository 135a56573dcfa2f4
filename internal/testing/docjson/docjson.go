// Package docjson checks that a JSON document's field names are documented:
// the tests of the packages that write JSON reports use it to keep their
// docs/*.md in step with the code.
package docjson

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// Keys returns every object key of the JSON document data, at any depth,
// except below the keys in skip (embedded documents with their own docs).
// Map-valued fields keyed by data (function names, types) are left out by
// listing their parents in opaque. It doesn't perform I/O.
func Keys(data []byte, skip, opaque []string) ([]string, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				seen[k] = true
				if slices.Contains(skip, k) || slices.Contains(opaque, k) {
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range t {
				walk(c)
			}
		}
	}
	walk(v)
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// Undocumented returns the keys that the markdown file doc never names in
// backquotes (`key`, or within a backquoted list such as `a`, `b`, or a
// "key": in a JSON example). It reads doc.
func Undocumented(doc string, keys []string) ([]string, error) {
	b, err := os.ReadFile(doc)
	if err != nil {
		return nil, err
	}
	text := string(b)
	var out []string
	for _, k := range keys {
		if !strings.Contains(text, "`"+k+"`") && !strings.Contains(text, "."+k+"`") && !strings.Contains(text, `"`+k+`"`) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Check fails t when a field of the JSON document data (Keys with skip and
// opaque) is not named in the markdown file doc. It reads doc.
func Check(t testing.TB, data []byte, doc string, skip, opaque []string) {
	t.Helper()
	keys, err := Keys(data, skip, opaque)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := Undocumented(doc, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("fields of the JSON not in %s: %v", doc, missing)
	}
}
