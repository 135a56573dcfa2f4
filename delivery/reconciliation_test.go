package delivery

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TestMissingSampleAdd: two shards' samples merge into the earliest
// MissingSampleSize, whatever the order of merging, and the report names
// each.
func TestMissingSampleAdd(t *testing.T) {
	md := func(seq uint64, s float64, rcpt string) MissingDelivery {
		return MissingDelivery{ID: NewID(run, seq), Recipient: rcpt, Remote: rcpt == "", Accepted: at(s).UTC()}
	}
	a := Reconciliation{Lost: 4, LostLocal: 3, LostRemote: 1, MissingSample: []MissingDelivery{md(1, 1, "u1@example.test"), md(3, 3, ""), md(5, 5, "u2@example.test"), md(7, 7, "u1@example.test")}}
	b := Reconciliation{Lost: 4, LostLocal: 4, MissingSample: []MissingDelivery{md(2, 2, "u2@example.test"), md(4, 4, "u1@example.test"), md(6, 6, "u1@example.test"), md(8, 3, "u2@example.test")}}
	ab, ba := a.Add(b), b.Add(a)
	if !reflect.DeepEqual(ab, ba) {
		t.Fatalf("a+b = %+v\nb+a = %+v", ab, ba)
	}
	want := []MissingDelivery{md(1, 1, "u1@example.test"), md(2, 2, "u2@example.test"), md(3, 3, ""), md(8, 3, "u2@example.test"), md(4, 4, "u1@example.test")}
	if !reflect.DeepEqual(ab.MissingSample, want) || ab.Lost != 8 {
		t.Errorf("merged sample %+v (Lost %d), want %+v (Lost 8)", ab.MissingSample, ab.Lost, want)
	}
	if len(a.MissingSample) != 4 || len(b.MissingSample) != 4 {
		t.Error("Add modified its operands")
	}
	lines := ab.Lines()
	for _, w := range []string{
		fmt.Sprintf("  missing: Message-ID <%s> to u1@example.test, accepted %s", NewID(run, 1), at(1).UTC().Format("2006-01-02 15:04:05.000 UTC")),
		fmt.Sprintf("  missing: Message-ID <%s> to a remote recipient, accepted %s", NewID(run, 3), at(3).UTC().Format("2006-01-02 15:04:05.000 UTC")),
	} {
		if !slices.Contains(lines, w) {
			t.Errorf("Lines() lacks %q:\n%q", w, lines)
		}
	}
	if got := (Reconciliation{}).Add(Reconciliation{}).MissingSample; got != nil {
		t.Errorf("empty + empty sample = %+v, want nil", got)
	}
}
