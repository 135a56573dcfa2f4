package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// Operations mailbench cut are reported per function, apart from the
// server's errors, and survive the JSON round trip and a merge.
func TestCancelledReportedApart(t *testing.T) {
	rules := compliance.Rules{MaxErrorPercent: 1, Functions: []compliance.Rule{
		{Function: measure.IMAPConnect, Limit: 5 * time.Second, RequiredPercent: 95},
		{Function: measure.SMTPData, Limit: 5 * time.Second, RequiredPercent: 95},
	}}
	stats := metrics.NewStats(rules.Limits())
	obs := func(f measure.Function, n int, c measure.ErrorClass) {
		for range n {
			stats.Observe(measure.Observation{Function: f, Start: time.Now(), Duration: time.Millisecond, Class: c})
		}
	}
	obs(measure.IMAPConnect, 50, measure.OK)
	obs(measure.SMTPData, 50, measure.OK)
	obs(measure.IMAPConnect, 3, measure.Cancelled)
	obs(measure.SMTPData, 1, measure.Cancelled)
	r := &Run{Tool: "mailbench", Functions: stats.Snapshot()}
	r.Evaluate(rules)
	if !r.Table.Compliant || r.Table.Errors.Errors != 0 || r.Table.Errors.Cancelled != 4 {
		t.Fatalf("table %+v: want compliant, 0 errors, 4 cancelled", r.Table.Errors)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if want := "Cancelled by mailbench (not server errors, not in the table): SMTP Data 1, IMAP Connect 3\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Merge(back, back)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Functions[measure.IMAPConnect].Cancelled; got != 6 {
		t.Errorf("merged IMAP Connect cancelled %d, want 6", got)
	}
	if m.Table.Errors.Cancelled != 8 || m.Table.Errors.Errors != 0 || !m.Table.Compliant {
		t.Errorf("merged error row %+v: want 8 cancelled, no errors, compliant", m.Table.Errors)
	}
}
