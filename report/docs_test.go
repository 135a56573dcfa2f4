package report

import (
	"bytes"
	"testing"

	"github.com/mailbench/mailbench/internal/docjson"
)

// TestSessionsJSONDocumented: every field of the report's "sessions"
// object is named in docs/report-schema.md.
func TestSessionsJSONDocumented(t *testing.T) {
	c := compliantRun()
	var b bytes.Buffer
	if err := WriteJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	keys, err := docjson.Keys(b.Bytes(), []string{"compliance", "functions", "generator", "sink", "inbound", "target",
		"timeline", "delivery", "connect", "server_clock", "shard", "remote_pending", "delivery_checks", "warnings"}, []string{"by_type"})
	if err != nil {
		t.Fatal(err)
	}
	missing, err := docjson.Undocumented("../docs/report-schema.md", keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("fields of the report JSON not in docs/report-schema.md: %v", missing)
	}
}
