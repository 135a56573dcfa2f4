package delivery_test

import (
	"fmt"
	"time"

	"github.com/mailbench/mailbench/delivery"
)

// A shard's remote deliveries that its own process never saw arrive are
// pending; the standalone sink's record settles them: arrived (with a
// Delivery Time each), duplicated, or missing. The result is the change to
// the run's Reconciliation: the two pending deliveries are settled.
func ExampleReconcileSink() {
	const run = 0x00c0ffee
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	pending := &delivery.Pending{RunID: run, Deliveries: []delivery.PendingDelivery{
		{Seq: 1, Key: delivery.RecipientKey("a@remote.test"), Accepted: t0.UnixNano()},
		{Seq: 2, Key: delivery.RecipientKey("b@remote.test"), Accepted: t0.UnixNano()},
	}}
	arrived := []delivery.RecordedArrival{
		{ID: "r00c0ffee-000000000001", Received: t0.Add(800 * time.Millisecond), Recipients: []uint32{delivery.RecipientKey("a@remote.test")}},
		{ID: "r00c0ffee-000000000001", Received: t0.Add(time.Second), Recipients: []uint32{delivery.RecipientKey("a@remote.test")}},
	}
	d := delivery.ReconcileSink(pending, arrived, nil)
	fmt.Printf("relayed %d, duplicated %d, missing %d, pending %d\n", d.RelayedRemote, d.Duplicated, d.LostRemote, d.PendingRemote)
	// Output: relayed 1, duplicated 1, missing 1, pending -2
}
