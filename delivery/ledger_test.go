package delivery

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"

	"github.com/mailbench/mailbench/measure"
)

const run = 0x0a0b0c0d

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	users = []string{"u1@example.test", "u2@example.test", "U3@Example.Test"}
)

func id(seq uint64) string        { return NewID(run, seq) }
func at(s float64) time.Time      { return t0.Add(time.Duration(s * float64(time.Second))) }
func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
func info(seq uint64, uid uint32, idate time.Time) MessageInfo {
	return MessageInfo{ID: id(seq), UID: uid, InternalDate: idate}
}

// collector is an Observer that keeps what it is given.
type collector struct{ testutil.ObservationLog }

// obsWant is an expected observation: function, start and duration.
type obsWant struct {
	f     measure.Function
	start time.Time
	d     time.Duration
}

func (c *collector) got() []obsWant {
	var out []obsWant
	for _, o := range c.All() {
		if o.Class != measure.OK {
			panic("delivery observation with an error class")
		}
		out = append(out, obsWant{o.Function, o.Start.UTC(), o.Duration})
	}
	return out
}

func sent(seq uint64, acc time.Time, local []string, remote ...string) measure.Submission {
	return measure.Submission{ID: id(seq), Accepted: acc, Local: local, Remote: remote, Size: 1000}
}

func arrival(seq uint64, recv time.Time, rcpts ...string) Arrival {
	return Arrival{ID: id(seq), Received: recv, Sum: "sha256:aa", BodySum: "sha256:aa", Recipients: rcpts}
}

func TestLedgerScenarios(t *testing.T) {
	u1, u2, u3 := users[0], users[1], users[2]
	tests := []struct {
		name   string
		steps  func(l *Ledger)
		finish bool
		// unlooked: the checker never looked through the INBOXes
		unlooked bool
		want     Reconciliation
		obs      []obsWant
	}{
		{
			name: "never looked for: unverified, not missing",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1, u2}))
				l.Looked(u2, at(5)) // before the acceptance: no look for this message
			},
			unlooked: true, finish: true,
			want: Reconciliation{Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 2, Unverified: 2},
		},
		{
			name: "looked for and not found: missing, with a Delivery Time observation of the wait",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}, "a@remote.test"))
			},
			finish: true,
			want:   Reconciliation{Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, RemoteDeliveries: 1, Lost: 2, LostLocal: 1, LostRemote: 1},
			obs:    []obsWant{{measure.DeliveryLocal, at(10), -1}, {measure.DeliveryRemote, at(10), -1}},
		},
		{
			name: "local delivery timed by INTERNALDATE",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(12))}, at(100))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10), sec(2.5)}},
		},
		{
			name: "INTERNALDATE taken at mid-second, before acceptance, clamps to 0",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10.7), []string{u1}))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(10))}, at(11))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10.7), 0}},
		},
		{
			name: "INTERNALDATE after the observation clamps to the observation",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(99))}, at(13))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10), sec(3)}},
		},
		{
			name: "seen twice with the same UID is one delivery, one observation",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1, u2}))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(11))}, at(20))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(11))}, at(30))
				l.SeenLocal(u2, []MessageInfo{info(1, 3, at(14))}, at(30))
			},
			want: Reconciliation{TimedByInternalDate: 2, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 2, DeliveredLocal: 2},
			obs:  []obsWant{{measure.DeliveryLocal, at(10), sec(1.5)}, {measure.DeliveryLocal, at(10), sec(4.5)}},
		},
		{
			name: "another UID for the same delivery is one duplicate",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(11)), info(1, 8, at(11))}, at(20))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(11)), info(1, 8, at(11))}, at(30))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1, Duplicated: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10), sec(1.5)}},
		},
		{
			name: "never seen is lost; rejected messages are sent but not expected",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1, u2}, "x@remote.test"))
				l.Rejected(2)
				l.SeenLocal(u2, []MessageInfo{info(1, 1, at(10))}, at(20))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 3, Accepted: 1, Rejected: 2, AcceptedBytes: 1000, LocalDeliveries: 2, RemoteDeliveries: 1,
				DeliveredLocal: 1, Lost: 2, LostLocal: 1, LostRemote: 1},
			obs: []obsWant{{measure.DeliveryLocal, at(10), sec(0.5)}},
		},
		{
			name: "other runs, population mail and unknown users are ignored",
			steps: func(l *Ledger) {
				l.Accepted(measure.Submission{ID: NewID(run+1, 1), Accepted: at(1), Local: []string{u1}})
				l.Accepted(measure.Submission{ID: "init-user1-INBOX-1", Accepted: at(1), Local: []string{u1}})
				l.Accepted(sent(1, at(10), []string{u1, "nobody@example.test"}))
				l.SeenLocal(u1, []MessageInfo{
					{ID: NewID(run+1, 1), UID: 1, InternalDate: at(1)},
					{ID: "init-user1-INBOX-1", UID: 2, InternalDate: at(1)},
					{UID: 3},
					info(1, 4, at(10)),
				}, at(20))
				l.SeenLocal("stranger@example.test", []MessageInfo{info(1, 4, at(10))}, at(20))
				l.ArrivedRemote(Arrival{ID: NewID(run+1, 1), Received: at(3), Recipients: []string{"x@remote.test"}})
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1, UnknownRecipients: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10), sec(0.5)}},
		},
		{
			name: "addresses match case-insensitively; a recipient listed twice counts once",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{"u3@example.test", "U3@EXAMPLE.TEST"}, "X@Remote.Test", "x@remote.test"))
				l.SeenLocal(u3, []MessageInfo{info(1, 1, at(12))}, at(20))
				l.ArrivedRemote(arrival(1, at(15), "x@REMOTE.test"))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, RemoteDeliveries: 1, DeliveredLocal: 1, RelayedRemote: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10), sec(2.5)}, {measure.DeliveryRemote, at(10), sec(5)}},
		},
		{
			name: "in the INBOX of a user it was not sent to: unexpected",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}))
				l.SeenLocal(u2, []MessageInfo{info(1, 1, at(12))}, at(20))
			},
			want: Reconciliation{Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, Lost: 1, LostLocal: 1, Unexpected: 1},
		},
		{
			name: "seen without INTERNALDATE, timed later by a sighting with one",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, time.Time{})}, at(40))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(13))}, at(50))
			},
			finish: true,
			want:   Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1},
			obs:    []obsWant{{measure.DeliveryLocal, at(10), sec(3.5)}},
		},
		{
			name: "seen only without INTERNALDATE: Finish times it by the first sighting",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, time.Time{})}, at(40))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, time.Time{})}, at(45))
			},
			finish: true,
			want:   Reconciliation{Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1, TimedByObservation: 1},
			obs:    []obsWant{{measure.DeliveryLocal, at(10), sec(30)}},
		},
		{
			name: "seen before Accepted (delivered before the 250 was read)",
			steps: func(l *Ledger) {
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(10))}, at(10.5))
				l.SeenLocal(u1, []MessageInfo{info(1, 7, at(10))}, at(10.6))
				l.ArrivedRemote(arrival(1, at(10.2), "x@remote.test"))
				l.Accepted(sent(1, at(10.1), []string{u1}, "x@remote.test"))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, RemoteDeliveries: 1, DeliveredLocal: 1, RelayedRemote: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10.1), sec(0.4)}, {measure.DeliveryRemote, at(10.1), sec(0.1)}},
		},
		{
			name: "seen but never accepted: unexpected",
			steps: func(l *Ledger) {
				l.SeenLocal(u1, []MessageInfo{info(5, 7, at(10))}, at(11))
				l.SeenLocal(u1, []MessageInfo{info(5, 7, at(10))}, at(12))
			},
			want: Reconciliation{Unexpected: 1},
		},
		{
			name: "remote: duplicate arrival, corrupted arrival, one lost",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), nil, "a@remote.test", "b@remote.test"))
				l.Accepted(sent(2, at(20), nil, "a@remote.test", "c@remote.test"))
				l.ArrivedRemote(arrival(1, at(11), "a@remote.test", "b@remote.test"))
				l.ArrivedRemote(arrival(1, at(12), "b@remote.test"))
				bad := arrival(2, at(25), "c@remote.test")
				bad.BodySum = "sha256:bb"
				l.ArrivedRemote(bad)
			},
			want: Reconciliation{Sent: 2, Accepted: 2, AcceptedBytes: 2000, RemoteDeliveries: 4, RelayedRemote: 3,
				Lost: 1, LostRemote: 1, Duplicated: 1, Corrupted: 1},
			obs: []obsWant{{measure.DeliveryRemote, at(10), sec(1)}, {measure.DeliveryRemote, at(10), sec(1)}, {measure.DeliveryRemote, at(20), sec(5)}},
		},
		{
			name: "remote arrival at a recipient it was not sent to: unexpected",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), nil, "a@remote.test"))
				l.ArrivedRemote(arrival(1, at(11), "z@remote.test"))
			},
			want: Reconciliation{Sent: 1, Accepted: 1, AcceptedBytes: 1000, RemoteDeliveries: 1, Lost: 1, LostRemote: 1, Unexpected: 1},
		},
		{
			name: "second Accepted of the same id is ignored",
			steps: func(l *Ledger) {
				l.Accepted(sent(1, at(10), []string{u1}))
				l.Accepted(sent(1, at(50), []string{u2}))
				l.SeenLocal(u1, []MessageInfo{info(1, 1, at(11))}, at(60))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 1, Accepted: 1, AcceptedBytes: 1000, LocalDeliveries: 1, DeliveredLocal: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(10), sec(1.5)}},
		},
		{
			name: "sequence numbers far apart use separate chunks",
			steps: func(l *Ledger) {
				l.Accepted(sent(3, at(10), []string{u1}))
				l.Accepted(sent(3*chunkSize+5, at(20), []string{u2}))
				l.SeenLocal(u2, []MessageInfo{info(3*chunkSize+5, 1, at(22)), info(3*chunkSize+6, 2, at(22))}, at(30))
			},
			want: Reconciliation{TimedByInternalDate: 1, Sent: 2, Accepted: 2, AcceptedBytes: 2000, LocalDeliveries: 2, DeliveredLocal: 1, Lost: 1, LostLocal: 1, Unexpected: 1},
			obs:  []obsWant{{measure.DeliveryLocal, at(20), sec(2.5)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c collector
			l := NewLedger(run, users, &c)
			tt.steps(l)
			if !tt.unlooked {
				lookAll(l, users, at(1000)) // the checker looked through every INBOX at the end
			}
			if tt.finish {
				l.Finish()
				l.Finish()
			}
			got := l.Reconcile()
			sample := got.MissingSample
			got.MissingSample = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Reconcile() =\n%+v\nwant\n%+v", got, tt.want)
			}
			// The sample names min(Lost, MissingSampleSize) of this run's
			// messages, earliest first.
			if int64(len(sample)) != min(got.Lost, MissingSampleSize) {
				t.Errorf("MissingSample = %+v, want %d entries (Lost %d)", sample, min(got.Lost, MissingSampleSize), got.Lost)
			}
			for i, m := range sample {
				if _, ok := l.ours(m.ID); !ok || (m.Recipient == "") != m.Remote || (i > 0 && m.Accepted.Before(sample[i-1].Accepted)) {
					t.Errorf("MissingSample[%d] = %+v: not a delivery of this run, or out of order", i, m)
				}
			}
			if got := c.got(); !slices.EqualFunc(got, tt.obs, func(g, w obsWant) bool {
				// d = -1: a missing delivery's wait so far, which the clock decides (> 0)
				return g.f == w.f && g.start.Equal(w.start) && (g.d == w.d || w.d == -1 && g.d > 0)
			}) {
				t.Errorf("observations =\n%v\nwant\n%v", got, tt.obs)
			}
		})
	}
}

func TestPending(t *testing.T) {
	l := NewLedger(run, users, nil)
	l.Accepted(sent(1, at(1), []string{users[0], users[1]}))
	l.Accepted(sent(2, at(2), []string{users[0]}))
	if got := l.Pending(users[0]); got != 2 {
		t.Errorf("Pending(u1) = %d, want 2", got)
	}
	l.SeenLocal(users[0], []MessageInfo{info(2, 9, time.Time{})}, at(3))
	if got := l.Pending(users[0]); got != 1 {
		t.Errorf("Pending(u1) after a sighting = %d, want 1", got)
	}
	if unseen, untimed := l.PendingTotal(); unseen != 2 || untimed != 1 {
		t.Errorf("PendingTotal() = %d, %d; want 2, 1", unseen, untimed)
	}
	if got := l.Pending("stranger@example.test"); got != 0 {
		t.Errorf("Pending(stranger) = %d, want 0", got)
	}
	l.Finish()
	if _, untimed := l.PendingTotal(); untimed != 0 {
		t.Errorf("untimed after Finish = %d, want 0", untimed)
	}
}

func TestBodyRead(t *testing.T) {
	l := NewLedger(run, users, nil)
	l.Accepted(sent(1, at(1), []string{users[0]}))
	l.Accepted(sent(2, at(1), []string{users[0]}))
	good := BodyInfo{ID: id(1), Sum: "sha256:aa", BodySum: "sha256:aa"}
	bad := BodyInfo{ID: id(2), Sum: "sha256:aa", BodySum: "sha256:bb"}
	tests := []struct {
		name    string
		b       BodyInfo
		wantErr bool
	}{
		{"intact", good, false},
		{"corrupted", bad, true},
		{"corrupted, read again", bad, true},
		{"population message, corrupted", BodyInfo{ID: "init-u1-INBOX-1", Sum: "sha256:aa", BodySum: "sha256:cc"}, true},
		{"no checksum header", BodyInfo{ID: id(1), BodySum: "sha256:cc"}, false},
	}
	for _, tt := range tests {
		err := l.BodyRead(users[0], tt.b)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: BodyRead() = %v, want error %v", tt.name, err, tt.wantErr)
		}
		var ie *measure.IntegrityError
		if err != nil && (!errors.As(err, &ie) || measure.Classify(err) != measure.Integrity) {
			t.Errorf("%s: BodyRead() = %T, want a *measure.IntegrityError", tt.name, err)
		}
	}
	r := l.Reconcile()
	if r.Corrupted != 1 || r.DeliveredLocal != 2 || r.Lost != 0 {
		t.Errorf("Reconcile() = %+v, want 1 corrupted, 2 delivered (body reads are sightings), 0 lost", r)
	}
}

func TestLinesGolden(t *testing.T) {
	r := Reconciliation{Sent: 1003, Accepted: 1000, Rejected: 3, AcceptedBytes: 4 << 20,
		LocalDeliveries: 1280, RemoteDeliveries: 320, DeliveredLocal: 1270, RelayedRemote: 318,
		Lost: 12, LostLocal: 10, LostRemote: 2, Duplicated: 4, Corrupted: 1,
		TimedByObservation: 7, Unexpected: 2, UnknownRecipients: 5, Unverified: 3}
	var b strings.Builder
	settled := Reconciliation{Sent: 100, Accepted: 100, LocalDeliveries: 120, RemoteDeliveries: 10, DeliveredLocal: 117,
		RelayedRemote: 10, DeletedByWorkload: 3, TimedByAnnouncement: 20, TimedByInternalDate: 95, TimedByObservation: 2,
		Late: 4, LateLocal: 3, LateRemote: 1}
	for _, clean := range []Reconciliation{{Sent: 10, Accepted: 10, LocalDeliveries: 12, DeliveredLocal: 12}, r, settled} {
		b.WriteString(strings.Join(clean.Lines(), "\n") + "\n")
		for _, f := range clean.Failing() {
			b.WriteString("FAIL: " + f + "\n")
		}
		b.WriteString("--\n")
	}
	golden := filepath.Join("testdata", "reconciliation.golden")
	if *testutil.Update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("Lines/Failing =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestFailing(t *testing.T) {
	tests := []struct {
		r    Reconciliation
		want int
	}{
		{Reconciliation{Accepted: 5, LocalDeliveries: 5, DeliveredLocal: 5}, 0},
		{Reconciliation{Lost: 1, LostLocal: 1}, 1},
		{Reconciliation{Duplicated: 1}, 1},
		{Reconciliation{Corrupted: 2}, 1},
		{Reconciliation{Lost: 1, LostRemote: 1, Duplicated: 1, Corrupted: 1}, 3},
		{Reconciliation{Unexpected: 3, TimedByObservation: 2, Rejected: 4}, 0},
	}
	for _, tt := range tests {
		if got := tt.r.Failing(); len(got) != tt.want {
			t.Errorf("%+v.Failing() = %q, want %d reasons", tt.r, got, tt.want)
		}
	}
}

// lookAll records that the checker looked through every INBOX at t.
func lookAll(l *Ledger, users []string, t time.Time) {
	for _, u := range users {
		l.Looked(u, t)
	}
}
