package measure

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestErrorClassesDocumented: docs/metrics.md lists exactly the error
// classes the code has, in its operations counter's row.
func TestErrorClassesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `mailbench_operations_total` .*$").Find(b)
	if row == nil {
		t.Fatal("docs/metrics.md has no mailbench_operations_total row")
	}
	m := regexp.MustCompile(`the error class \(([^)]*)\)`).FindSubmatch(row)
	if m == nil {
		t.Fatalf("the row names no error classes: %s", row)
	}
	var documented []string
	for _, c := range regexp.MustCompile("`([a-z]+)`").FindAllSubmatch(m[1], -1) {
		documented = append(documented, string(c[1]))
	}
	var code []string
	for _, c := range ErrorClasses {
		code = append(code, string(c))
	}
	if !slices.Equal(documented, code) {
		t.Errorf("docs/metrics.md lists the classes %v, the code has %v (measure.ErrorClasses, in order)", documented, code)
	}
}
