package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/report"
)

func TestWriteSideBySideGolden(t *testing.T) {
	good := compliantRun()
	good.Delivery = &delivery.Reconciliation{Lost: 0, Duplicated: 1, Corrupted: 0}
	bad := failingRun()
	var buf bytes.Buffer
	if err := WriteSideBySide(&buf, []*report.Run{good, bad}, []string{"dovecot-2.3", ""}); err != nil {
		t.Fatal(err)
	}
	golden(t, "side.txt.golden", buf.Bytes())

	out := buf.String()
	// The first column is labelled, the second falls back to the run's name.
	header := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(header, "dovecot-2.3") || !strings.Contains(header, "quick") {
		t.Errorf("header %q", header)
	}
	// The failing run says why below the table.
	if !strings.Contains(out, "quick: partial (interrupted by SIGINT); failing: ") || !strings.Contains(out, string(measure.IMAPExpunge)) {
		t.Errorf("no reason for the failing run:\n%s", out)
	}
	// A function only one run has a row for is a row with "-" for the other.
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, string(measure.DeliveryLocal)+" % compliant") && !strings.HasSuffix(strings.TrimSpace(l), "-") {
			t.Errorf("delivery row of a run without it: %q", l)
		}
	}
}

func TestWriteSideBySideRejects(t *testing.T) {
	tests := []struct {
		name   string
		runs   []*report.Run
		labels []string
		want   string
	}{
		{"no runs", nil, nil, "no runs"},
		{"labels mismatch", []*report.Run{compliantRun()}, []string{"a", "b"}, "2 labels for 1 runs"},
		{"nil run", []*report.Run{compliantRun(), nil}, nil, "run 1 is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteSideBySide(&bytes.Buffer{}, tt.runs, tt.labels)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestWorstRow(t *testing.T) {
	bad := failingRun()
	row, ok := bad.WorstRow()
	// IMAP EXPUNGE is at exactly 95.00%; LSUB never ran and is skipped.
	if !ok || row.Function != measure.IMAPExpunge || row.PercentCompliant != 95 {
		t.Errorf("worst row %s %.2f%% (ok %v), want %s 95%%", row.Function, row.PercentCompliant, ok, measure.IMAPExpunge)
	}
	if _, ok := (&report.Run{}).WorstRow(); ok {
		t.Error("a run without rows has a worst row")
	}
	if bad.Valid() || !compliantRun().Valid() {
		t.Error("Valid: want false for the partial failing run, true for the compliant one")
	}
}

func TestSideBySideWrite(t *testing.T) {
	tab := &SideBySide{
		Title:    []string{"Title", "", "banner"},
		Head:     []string{"a", "bb"},
		Sections: [][]string{{"legend 1", "legend 2"}, {"capacity"}},
		Notes:    []string{"note: one"},
	}
	tab.Add("first row", func(i int) string { return []string{"1", "22222"}[i] })
	tab.Add("  second", func(i int) string { return "-" })
	var buf bytes.Buffer
	if err := tab.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := "Title\n\nbanner\n\n" +
		"           a  bb\n" +
		"first row  1  22222\n" +
		"  second   -  -\n" +
		"\nlegend 1\nlegend 2\n" +
		"\ncapacity\n" +
		"note: one\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestFloorCeilPercent(t *testing.T) {
	if got := report.FloorPercent(99.996); got != "99.99" {
		t.Errorf("FloorPercent(99.996) = %s", got)
	}
	if got := report.CeilPercent(0.001); got != "0.01" {
		t.Errorf("CeilPercent(0.001) = %s", got)
	}
	if got := report.FloorPercent(100); got != "100.00" {
		t.Errorf("FloorPercent(100) = %s", got)
	}
}

// TestSideBySideWarnsOnPhases: runs of other phase lengths are compared
// with a warning naming the odd one, in the text and on the page; alike
// runs get none.
func TestSideBySideWarnsOnPhases(t *testing.T) {
	a, b := compliantRun(), compliantRun()
	b.Measurement = 2 * b.Measurement
	var text bytes.Buffer
	if err := WriteSideBySide(&text, []*report.Run{a, b}, []string{"base", "long"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "WARNING: the runs' phases differ: long (warm-up 1m0s, measurement 20m0s") {
		t.Errorf("no warning:\n%s", text.String())
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, []*report.Run{a, b}, HTMLOptions{Labels: []string{"base", "long"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "the runs&#39; phases differ") {
		t.Error("the page has no warning")
	}
	text.Reset()
	if err := WriteSideBySide(&text, []*report.Run{a, compliantRun()}, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "phases differ") {
		t.Errorf("alike runs warned:\n%s", text.String())
	}
}
