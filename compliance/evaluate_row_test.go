package compliance

import (
	"testing"

	"github.com/mailbench/mailbench/measure"
)

func TestTableRow(t *testing.T) {
	tb := Table{Rows: []Row{{Function: measure.IMAPConnect}, {Function: measure.IMAPSelectInbox}}}
	if row, ok := tb.Row(measure.IMAPSelectInbox); !ok || row.Function != measure.IMAPSelectInbox {
		t.Fatalf("Row(SELECT_INBOX) = %v, %v", row, ok)
	}
	if _, ok := tb.Row(measure.SMTPData); ok {
		t.Fatal("Row found a function the table has no row for")
	}
}
