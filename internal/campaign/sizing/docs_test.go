package sizing

import (
	"bytes"
	"context"
	"testing"

	"github.com/mailbench/mailbench/internal/testing/docjson"
)

// TestJSONDocumented: every field of the size JSON (a search with every
// optional part present) is named in docs/size.md.
func TestJSONDocumented(t *testing.T) {
	s := &synthetic{capacity: 5000, now: t0}
	res, err := Search(context.Background(), context.Background(), baseConfig(), Options{Run: s.run, Start: 1000, Now: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	res.FixedUsersWhy, res.MailbenchBound = "--users", "x"
	res.Probes[0].Prepared = &Prepared{Users: 1, Messages: 2}
	res.Probes[0].Err, res.Probes[0].Reason = "e", "r"
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	docjson.Check(t, b.Bytes(), "../../../docs/size.md", []string{"report"}, []string{"p95_us", "percent_compliant"})
}
