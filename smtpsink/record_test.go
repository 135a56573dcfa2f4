package smtpsink

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
)

func TestRecordRoundTrip(t *testing.T) {
	r := NewRecord()
	t0 := time.Unix(1_800_000_000, 123)
	in := []delivery.Arrival{
		{ID: "r0000a001-000000000001", Received: t0, Recipients: []string{"a@remote.example", "B@Remote.example"}},
		{ID: "r0000a002-000000000001", Received: t0.Add(-time.Second), Sum: "x", BodySum: "y"},
		{ID: "", Received: t0.Add(time.Hour), Recipients: []string{"c@remote.example"}},
	}
	for _, a := range in {
		r.Add(a)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf, nil); err != nil {
		t.Fatal(err)
	}
	got, err := delivery.ReadSinkReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Arrivals) != len(in) {
		t.Fatalf("%d arrivals, want %d", len(got.Arrivals), len(in))
	}
	for i, a := range in {
		g := got.Arrivals[i]
		var keys []uint32
		for _, to := range a.Recipients {
			keys = append(keys, delivery.RecipientKey(to))
		}
		if keys == nil {
			keys = []uint32{}
		}
		want := delivery.RecordedArrival{ID: a.ID, Received: a.Received, Corrupt: a.Sum != "" && a.Sum != a.BodySum, Recipients: keys}
		if !g.Received.Equal(want.Received) || g.ID != want.ID || g.Corrupt != want.Corrupt || !reflect.DeepEqual(g.Recipients, want.Recipients) {
			t.Errorf("arrival %d: got %+v, want %+v", i, g, want)
		}
	}
	if delivery.RecipientKey("B@Remote.example") != delivery.RecipientKey("b@remote.example") {
		t.Error("delivery.RecipientKey is case sensitive")
	}
	if _, err := delivery.ReadSinkReport(bytes.NewReader([]byte(`{"tool":"mailbench-sink","schema_version":1,"started":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:00:00Z","arrival_count":1,"arrivals":""}`))); err == nil {
		t.Error("a record that lost its arrivals was read")
	}
}
