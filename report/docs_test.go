package report

import (
	"bytes"
	"testing"

	"github.com/mailbench/mailbench/internal/testing/docjson"
)

// TestSessionsJSONDocumented: every field of the report's "sessions"
// object is named in docs/report-schema.md.
func TestSessionsJSONDocumented(t *testing.T) {
	c := compliantRun()
	var b bytes.Buffer
	if err := WriteJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	docjson.Check(t, b.Bytes(), "../docs/report-schema.md", []string{"compliance", "functions", "generator", "sink", "inbound", "target",
		"timeline", "delivery", "connect", "server_clock", "shard", "remote_pending", "delivery_checks", "warnings"}, []string{"by_type"})
}
