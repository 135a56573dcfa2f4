package tomlstrict

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type testSpan struct{ time.Duration }

func (s *testSpan) UnmarshalText(b []byte) error {
	d, err := time.ParseDuration(string(b))
	s.Duration = d
	return err
}

type testDoc struct {
	Name  string `toml:"name"`
	Inner struct {
		Count  int      `toml:"count"`
		Span   testSpan `toml:"span"`
		Secret string   `toml:"secret"`
	} `toml:"inner"`
	Items []struct {
		Size int `toml:"size"`
	} `toml:"items"`
}

// TestDecode: every problem is found with its line, not only the first;
// an unknown key gets the nearest known one as a hint; a failed value
// keeps its default; a secret's value is never echoed; a struct with
// UnmarshalText is one value.
func TestDecode(t *testing.T) {
	src := `name = "x"
[inner]
cuont = 3
span = "2s"
secret = 42
[[items]]
size = "big"
[[items]]
size = 7
`
	var d testDoc
	d.Inner.Count = 9
	lines, probs := Decode(src, &d, Options{
		Secrets:  map[string]string{"inner.secret": "the secret"},
		TypeName: func(t reflect.Type) string { return map[bool]string{true: "a span"}[t == reflect.TypeFor[testSpan]()] },
	})
	var got []string
	for _, p := range probs {
		got = append(got, p.Key+"@"+strings.TrimSpace(p.Msg)+"@"+string(rune('0'+p.Line)))
	}
	want := []string{
		`inner.cuont@unknown key (did you mean "count"?)@3`,
		`inner.secret@must be a string@5`,
		`items[0].size@must be an integer (got string)@7`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d.Name != "x" || d.Inner.Count != 9 || d.Inner.Span.Duration != 2*time.Second || len(d.Items) != 2 || d.Items[1].Size != 7 {
		t.Errorf("decoded %+v", d)
	}
	if lines.Locate(PathOf("items").At(1).With("size")) != 9 {
		t.Errorf("line of items[1].size: %d, want 9", lines.Locate(PathOf("items").At(1).With("size")))
	}

	_, probs = Decode("[inner]\nsecret = \"unterminated\n", &d, Options{Secrets: map[string]string{"inner.secret": "the secret"}})
	if len(probs) != 1 || probs[0].Line != 2 || strings.Contains(probs[0].Msg, "unterminated") || !strings.Contains(probs[0].Msg, "it holds the secret") {
		t.Errorf("syntax error on a secret's line: %+v", probs)
	}
}
