package delivery

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// A delivery found after its limit is late, not lost; one never found is
// lost; Outstanding says when the last limit passes.
func TestLateIsNotLost(t *testing.T) {
	u1, u2 := users[0], users[1]
	var c collector
	l := NewLedger(run, users, &c)
	l.SetLimits(sec(60), sec(60))
	l.Accepted(sent(1, at(0), []string{u1}, "r@remote.test"))
	l.Accepted(sent(2, at(5), []string{u1, u2}))
	if n, due := l.Outstanding(); n != 4 || !due.Equal(at(65)) {
		t.Fatalf("Outstanding() = %d, %v; want 4, %v", n, due, at(65))
	}
	// Message 1: in the INBOX at 20 s (in time), relayed at 70 s (late).
	l.SeenLocal(u1, []MessageInfo{info(1, 1, at(20))}, at(80))
	l.ArrivedRemote(arrival(1, at(70), "r@remote.test"))
	// Message 2: u1's copy appears at 90 s (late), u2's never.
	l.SeenLocal(u1, []MessageInfo{info(2, 2, at(90))}, at(95))
	if n, due := l.Outstanding(); n != 1 || !due.Equal(at(65)) {
		t.Fatalf("Outstanding() = %d, %v; want 1, %v", n, due, at(65))
	}
	lookAll(l, users, at(100)) // the checker looked through every INBOX at the end
	got := l.Reconcile()
	want := Reconciliation{Sent: 2, Accepted: 2, AcceptedBytes: 2000, LocalDeliveries: 3, RemoteDeliveries: 1,
		DeliveredLocal: 2, RelayedRemote: 1, Lost: 1, LostLocal: 1, TimedByInternalDate: 2,
		Late: 2, LateLocal: 1, LateRemote: 1}
	sample := got.MissingSample
	got.MissingSample = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Reconcile() =\n%+v\nwant\n%+v", got, want)
	}
	// The report names it, for the server's logs.
	wantSample := []MissingDelivery{{ID: NewID(run, 2), Recipient: u2, Accepted: at(5)}}
	if !slices.EqualFunc(sample, wantSample, func(a, b MissingDelivery) bool {
		return a.ID == b.ID && a.Recipient == b.Recipient && a.Remote == b.Remote && a.Accepted.Equal(b.Accepted)
	}) {
		t.Errorf("MissingSample = %+v, want %+v", sample, wantSample)
	}
	if lines := got.Lines(); !slices.Contains(lines, "Missing                1 (looked for, not found by the end of settle: not delivered within the limit; the server may still hold them)") {
		t.Errorf("Lines() = %q", lines)
	}
	if f := got.Failing(); len(f) != 1 {
		t.Errorf("Failing() = %q: want the lost delivery only (late ones are the delivery time rows' business)", f)
	}
	l.SeenLocal(u2, []MessageInfo{info(2, 3, at(100))}, at(101))
	if n, due := l.Outstanding(); n != 0 || !due.IsZero() {
		t.Errorf("Outstanding() with everything found = %d, %v", n, due)
	}
}

// Deliveries the workload's cleanup deletes before anything saw them are
// neither lost nor timed; a later sighting (the deletion failed) turns
// them into ordinary seen deliveries.
func TestDeletedByWorkload(t *testing.T) {
	u1 := users[0]
	var c collector
	l := NewLedger(run, users, &c)
	l.Accepted(sent(1, at(0), []string{u1}))
	l.Accepted(sent(2, at(1), []string{u1}))
	l.Accepted(sent(3, at(2), []string{u1}))
	// Message 3 is seen first, then the cleanup takes 1, 3 and a
	// population message; 4 is deleted before its Accepted arrives.
	l.SeenLocal(u1, []MessageInfo{info(3, 3, at(2))}, at(10))
	l.Deleted(u1, []MessageInfo{info(1, 1, time.Time{}), info(3, 3, time.Time{}), {ID: "init-u1-INBOX-1", UID: 9}})
	l.Deleted(u1, []MessageInfo{info(4, 4, time.Time{})})
	l.Accepted(sent(4, at(3), []string{u1}))
	if got := l.Pending(u1); got != 1 {
		t.Errorf("Pending(u1) = %d, want 1 (message 2)", got)
	}
	lookAll(l, users, at(100))
	r := l.Reconcile()
	if r.DeletedByWorkload != 2 || r.LostLocal != 1 || r.DeliveredLocal != 1 {
		t.Errorf("Reconcile() = %+v; want 2 deleted by the workload, 1 lost (message 2), 1 seen", r)
	}
	// Message 1 was not deleted after all: a check session sees it.
	l.SeenLocal(u1, []MessageInfo{info(1, 1, at(0))}, at(20))
	l.SeenLocal(u1, []MessageInfo{info(2, 2, at(1))}, at(20))
	l.Finish()
	r = l.Reconcile()
	if r.DeletedByWorkload != 1 || r.Lost != 0 || r.DeliveredLocal != 3 || r.LocalDeliveries != 4 {
		t.Errorf("Reconcile() = %+v; want 1 deleted, 0 lost, 3 seen of 4", r)
	}
	if n := len(c.got()); n != 3 {
		t.Errorf("%d delivery observations, want 3 (the deleted one has no delivery time)", n)
	}
	if lines := r.Lines(); !slices.ContainsFunc(lines, func(s string) bool {
		return s == "Local deliveries       4, seen in INBOX 3, deleted unseen by the workload 1, missing 0"
	}) {
		t.Errorf("Lines() = %q", lines)
	}
}

// An announcement (EXISTS in a watched INBOX) times the delivery to the
// nanosecond it was given, also before Accepted and over a delivery seen
// without an INTERNALDATE; an INTERNALDATE that came first is kept.
func TestAnnounced(t *testing.T) {
	u1 := users[0]
	var c collector
	l := NewLedger(run, users, &c)
	l.SetLimits(sec(1), 0)
	l.Accepted(sent(1, at(10), []string{u1}))
	l.Announced(u1, []MessageInfo{info(1, 1, time.Time{})}, []time.Time{at(10.0123)})
	l.Announced(u1, []MessageInfo{info(2, 2, time.Time{})}, []time.Time{at(20.5)}) // before its Accepted
	l.Accepted(sent(2, at(20), []string{u1}))
	l.Accepted(sent(3, at(30), []string{u1}))
	l.SeenLocal(u1, []MessageInfo{info(3, 3, time.Time{})}, at(40)) // UID FETCH: no INTERNALDATE
	l.Announced(u1, []MessageInfo{info(3, 3, time.Time{})}, []time.Time{at(31.25)})
	l.Accepted(sent(4, at(40), []string{u1}))
	l.SeenLocal(u1, []MessageInfo{info(4, 4, at(41))}, at(50))
	l.Announced(u1, []MessageInfo{info(4, 4, time.Time{})}, []time.Time{at(40.2)})
	l.Announced(u1, []MessageInfo{info(1, 1, time.Time{})}, []time.Time{at(99)}) // again: nothing
	l.Finish()
	want := []obsWant{
		{measure.DeliveryLocal, at(10), sec(0.0123)},
		{measure.DeliveryLocal, at(20), sec(0.5)},
		{measure.DeliveryLocal, at(30), sec(1.25)},
		{measure.DeliveryLocal, at(40), sec(1.5)},
	}
	if got := c.got(); !slices.EqualFunc(got, want, func(a, b obsWant) bool {
		return a.f == b.f && a.start.Equal(b.start) && (a.d-b.d).Abs() < time.Microsecond
	}) {
		t.Errorf("observations =\n%v\nwant\n%v", got, want)
	}
	r := l.Reconcile()
	if r.TimedByAnnouncement != 3 || r.TimedByInternalDate != 1 || r.TimedByObservation != 0 || r.DeliveredLocal != 4 || r.LateLocal != 2 {
		t.Errorf("Reconcile() = %+v; want 3 by announcement, 1 by INTERNALDATE, 4 seen, 2 late", r)
	}
}
