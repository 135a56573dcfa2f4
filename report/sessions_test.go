package report

import (
	"reflect"
	"testing"
)

// TestSessionCountsAddCoversEveryField: every field of SessionCounts is
// either added by add or named here as the merge's own (or derived), so a
// field added later cannot be lost in a merge unnoticed.
func TestSessionCountsAddCoversEveryField(t *testing.T) {
	mergeLevel := map[string]bool{
		// rates and conversions: summed in order, or checked equal, by MergeWith
		"TargetSessionsPerHour": true, "AchievedSessionsPerHour": true, "SessionsPerUserHour": true,
		"EquivalentUsers": true, "MeanSessionDuration": true,
		// derived: WriteJSON computes them
		"Expected": true, "ExpectedLow": true, "ExpectedHigh": true, "UsersFigured": true, "PerUser": true,
		"DroppedBy": true, "MeanConcurrency": true, "AchievedBandLow": true, "AchievedBandHigh": true,
	}
	var one SessionCounts
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("x")
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]int64{"check": 1}))
		default:
			t.Fatalf("field %s: kind %v not handled by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	sum := reflect.ValueOf(one.add(one))
	for i := range sum.NumField() {
		name := sum.Type().Field(i).Name
		if got := sum.Field(i); got.IsZero() != mergeLevel[name] {
			if mergeLevel[name] {
				t.Errorf("%s: add set it, but MergeWith owns it (or it is derived): remove it from add or from this list", name)
			} else {
				t.Errorf("%s: add lost it", name)
			}
		}
	}
	if got := one.add(one).SessionsByType["check"]; got != 2 {
		t.Errorf("sessions by type added to %d, want 2", got)
	}
}
