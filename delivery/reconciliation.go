package delivery

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reconciliation compares what the server accepted with what was found.
// Message counts are messages; delivery counts are (message, recipient)
// pairs. It is a plain value: JSON-encodable as is.
type Reconciliation struct {
	Sent          int64 `json:"sent"`           // messages the server answered at submission: Accepted + Rejected
	Accepted      int64 `json:"accepted"`       // messages accepted (at least one recipient)
	Rejected      int64 `json:"rejected"`       // messages refused at submission
	AcceptedBytes int64 `json:"accepted_bytes"` // size of the accepted messages

	LocalDeliveries  int64 `json:"local_deliveries"`  // accepted message × local recipient
	RemoteDeliveries int64 `json:"remote_deliveries"` // accepted message × remote recipient
	DeliveredLocal   int64 `json:"delivered_local"`   // local deliveries seen in the recipient's INBOX
	RelayedRemote    int64 `json:"relayed_remote"`    // remote deliveries that arrived at the sink

	// Lost (the JSON's historic name; the report says "missing") counts the
	// accepted deliveries looked for and not found by the end of settle:
	// not delivered within the limit (their Delivery Time rows count them
	// as non-compliant), though the server may still hold them (a deferred
	// queue). LostLocal + LostRemote.
	Lost       int64 `json:"lost"`
	LostLocal  int64 `json:"lost_local"`  // local deliveries looked for (the checker looked through the INBOX after acceptance) and never seen
	LostRemote int64 `json:"lost_remote"` // remote deliveries that never arrived at this run's sink
	// Unverified counts local deliveries never seen whose INBOX the
	// checker could not look through after their acceptance (a login
	// refused, a server down): mailbench did not look, so it does not call
	// them missing. They make a run not certifiable.
	Unverified int64 `json:"unverified"`
	// PendingRemote counts remote deliveries of a shard whose sink is
	// external: they are reconciled later against the sink's record
	// (mailbench report --sink), not counted lost.
	PendingRemote int64 `json:"pending_remote,omitempty"`
	Duplicated    int64 `json:"duplicated"` // deliveries found more than once (another UID, or a second arrival)
	Corrupted     int64 `json:"corrupted"`  // deliveries whose body checksum differed from the stamped one

	// TimedByObservation counts local deliveries that were never seen with
	// an INTERNALDATE: their Delivery Time is the time of the first
	// sighting, an upper bound.
	TimedByObservation int64 `json:"timed_by_observation"`
	// TimedByAnnouncement counts local deliveries timed by the moment a
	// watched INBOX announced them (IMAP IDLE or a fast poll: EXISTS),
	// to the millisecond (poll: to the poll interval).
	TimedByAnnouncement int64 `json:"timed_by_announcement,omitempty"`
	// TimedByVisibility counts local deliveries whose announcement (EXISTS)
	// ran ahead of the message: the fetch right after it did not return
	// the message yet. They are timed by the fetch that first returned it
	// (to the watcher's backoff step, a few ms), not by the announcement;
	// AheadMaxMs is the longest such lead (visible − announced).
	TimedByVisibility int64 `json:"timed_by_visibility,omitempty"`
	AheadMaxMs        int64 `json:"ahead_max_ms,omitempty"`
	// TimedByInternalDate counts local deliveries timed by their
	// INTERNALDATE (whole seconds, taken at mid-second: ±0.5 s).
	TimedByInternalDate int64 `json:"timed_by_internaldate,omitempty"`

	// Late counts deliveries found, but whose delivery time exceeded the
	// delivery limit: LateLocal + LateRemote. They are not lost.
	Late       int64 `json:"late,omitempty"`
	LateLocal  int64 `json:"late_local,omitempty"`
	LateRemote int64 `json:"late_remote,omitempty"`
	// DeletedByWorkload counts local deliveries that the workload's own
	// cleanup sessions deleted before anything else saw them: delivered
	// (the cleanup found them), neither lost nor timed.
	DeletedByWorkload int64 `json:"deleted_by_workload,omitempty"`
	// Unexpected counts sightings of this run's messages that match no
	// accepted delivery: a message whose submission failed but that was
	// delivered anyway, or a message in the INBOX of (or relayed to) an
	// address it was not sent to.
	Unexpected int64 `json:"unexpected"`
	// UnknownRecipients counts accepted local recipients that are not in
	// the user list: they are not accounted for.
	UnknownRecipients int64 `json:"unknown_recipients"`
	// MissingSample names the first missing deliveries (earliest accepted
	// first, at most MissingSampleSize), so that they can be looked up in
	// the server's logs by Message-ID. Remote deliveries reconciled
	// against an external sink's record (ReconcileSink) are counted in
	// LostRemote but not named.
	MissingSample []MissingDelivery `json:"missing_sample,omitempty"`
}

// MissingSampleSize bounds Reconciliation.MissingSample.
const MissingSampleSize = 5

// MissingDelivery is one delivery counted missing.
type MissingDelivery struct {
	ID        string    `json:"id"`                  // the message's Message-ID, without angle brackets
	Recipient string    `json:"recipient,omitempty"` // the local user's address; empty for a remote one (the ledger keeps only its hash)
	Remote    bool      `json:"remote,omitempty"`
	Accepted  time.Time `json:"accepted"` // when the server accepted the message
}

// addMissing merges b into a, keeping the MissingSampleSize earliest
// (ties by ID, so that the order of merging does not matter).
func addMissing(a, b []MissingDelivery) []MissingDelivery {
	if len(b) == 0 {
		return a
	}
	out := append(append([]MissingDelivery(nil), a...), b...)
	slices.SortFunc(out, func(x, y MissingDelivery) int {
		return cmp.Or(x.Accepted.Compare(y.Accepted), strings.Compare(x.ID, y.ID), strings.Compare(x.Recipient, y.Recipient))
	})
	return out[:min(len(out), MissingSampleSize)]
}

// Lines renders the reconciliation as the text lines of the report's
// "Delivery" section, without trailing newlines. It doesn't perform I/O.
func (r Reconciliation) Lines() []string {
	lines := []string{
		fmt.Sprintf("Messages sent          %d (accepted %d, rejected %d)", r.Sent, r.Accepted, r.Rejected),
		localLine(r),
		fmt.Sprintf("Remote deliveries      %d, arrived at the sink %d, missing %d", r.RemoteDeliveries, r.RelayedRemote, r.LostRemote),
		fmt.Sprintf("Missing                %d (looked for, not found by the end of settle: not delivered within the limit; the server may still hold them)", r.Lost),
	}
	for _, m := range r.MissingSample {
		to := m.Recipient
		if m.Remote {
			to = "a remote recipient"
		}
		lines = append(lines, fmt.Sprintf("  missing: Message-ID <%s> to %s, accepted %s", m.ID, to, m.Accepted.UTC().Format("2006-01-02 15:04:05.000 UTC")))
	}
	lines = append(lines,
		fmt.Sprintf("Duplicated             %d", r.Duplicated),
		fmt.Sprintf("Corrupted              %d", r.Corrupted),
	)
	if r.Unverified > 0 {
		lines = append(lines, fmt.Sprintf("Unverified             %d (local, in INBOXes the checker could not open: neither found nor missing)", r.Unverified))
	}
	if r.PendingRemote > 0 {
		lines = append(lines, fmt.Sprintf("Pending remote         %d (to reconcile against the external sink's record)", r.PendingRemote))
	}
	if r.Late > 0 {
		lines = append(lines, fmt.Sprintf("Late                   %d (%d local, %d remote: found, after the delivery limit)", r.Late, r.LateLocal, r.LateRemote))
	}
	if r.TimedByAnnouncement > 0 || r.TimedByInternalDate > 0 || r.TimedByVisibility > 0 {
		lines = append(lines, fmt.Sprintf("Local delivery timing  %d announced (IDLE/poll EXISTS, ms), %d by INTERNALDATE (±0.5 s), %d first seen (upper bound)",
			r.TimedByAnnouncement, r.TimedByInternalDate, r.TimedByObservation))
		if r.TimedByVisibility > 0 {
			lines = append(lines, fmt.Sprintf("Announced ahead        %d (the server announced them before a fetch could return them, by up to %d ms; timed when fetchable)",
				r.TimedByVisibility, r.AheadMaxMs))
		}
	} else if r.TimedByObservation > 0 {
		lines = append(lines, fmt.Sprintf("Timed by observation   %d (no INTERNALDATE seen: upper bound)", r.TimedByObservation))
	}
	if r.Unexpected > 0 {
		lines = append(lines, fmt.Sprintf("Unexpected             %d (seen, but not an accepted delivery)", r.Unexpected))
	}
	if r.UnknownRecipients > 0 {
		lines = append(lines, fmt.Sprintf("Unknown recipients     %d (local, not in the user list: not accounted)", r.UnknownRecipients))
	}
	return lines
}

// Failing returns why the run cannot be compliant on delivery grounds, one
// reason per line; nil when none. Missing mail fails a run; so do
// duplicated and corrupted mail, which a mail server must not produce.
func (r Reconciliation) Failing() []string {
	var out []string
	if r.Lost > 0 {
		out = append(out, fmt.Sprintf("%d accepted %s missing: not found within the delivery limit and settle (%d local, %d remote)", r.Lost, deliveries(r.Lost), r.LostLocal, r.LostRemote))
	}
	if r.Duplicated > 0 {
		out = append(out, fmt.Sprintf("%d %s duplicated", r.Duplicated, deliveries(r.Duplicated)))
	}
	if r.Corrupted > 0 {
		out = append(out, fmt.Sprintf("%d %s corrupted", r.Corrupted, deliveries(r.Corrupted)))
	}
	return out
}

// localLine is the "Local deliveries" line; the deletions by the workload
// appear only when there are some.
func localLine(r Reconciliation) string {
	if r.DeletedByWorkload > 0 {
		return fmt.Sprintf("Local deliveries       %d, seen in INBOX %d, deleted unseen by the workload %d, missing %d",
			r.LocalDeliveries, r.DeliveredLocal, r.DeletedByWorkload, r.LostLocal)
	}
	if r.Unverified > 0 {
		return fmt.Sprintf("Local deliveries       %d, seen in INBOX %d, missing %d, unverified %d", r.LocalDeliveries, r.DeliveredLocal, r.LostLocal, r.Unverified)
	}
	return fmt.Sprintf("Local deliveries       %d, seen in INBOX %d, missing %d", r.LocalDeliveries, r.DeliveredLocal, r.LostLocal)
}

func deliveries(n int64) string {
	if n == 1 {
		return "delivery"
	}
	return "deliveries"
}

// Add returns the sum of r and o, field by field: the reconciliation of two
// load generators' shards of one run. It doesn't modify either.
func (r Reconciliation) Add(o Reconciliation) Reconciliation {
	return Reconciliation{
		Sent: r.Sent + o.Sent, Accepted: r.Accepted + o.Accepted, Rejected: r.Rejected + o.Rejected,
		AcceptedBytes:    r.AcceptedBytes + o.AcceptedBytes,
		LocalDeliveries:  r.LocalDeliveries + o.LocalDeliveries,
		RemoteDeliveries: r.RemoteDeliveries + o.RemoteDeliveries,
		DeliveredLocal:   r.DeliveredLocal + o.DeliveredLocal,
		RelayedRemote:    r.RelayedRemote + o.RelayedRemote,
		Lost:             r.Lost + o.Lost, LostLocal: r.LostLocal + o.LostLocal, LostRemote: r.LostRemote + o.LostRemote,
		Duplicated: r.Duplicated + o.Duplicated, Corrupted: r.Corrupted + o.Corrupted,
		TimedByObservation:  r.TimedByObservation + o.TimedByObservation,
		TimedByAnnouncement: r.TimedByAnnouncement + o.TimedByAnnouncement,
		TimedByVisibility:   r.TimedByVisibility + o.TimedByVisibility,
		AheadMaxMs:          max(r.AheadMaxMs, o.AheadMaxMs),
		TimedByInternalDate: r.TimedByInternalDate + o.TimedByInternalDate,
		Late:                r.Late + o.Late, LateLocal: r.LateLocal + o.LateLocal, LateRemote: r.LateRemote + o.LateRemote,
		DeletedByWorkload: r.DeletedByWorkload + o.DeletedByWorkload,
		Unexpected:        r.Unexpected + o.Unexpected,
		UnknownRecipients: r.UnknownRecipients + o.UnknownRecipients,
		Unverified:        r.Unverified + o.Unverified,
		PendingRemote:     r.PendingRemote + o.PendingRemote,
		MissingSample:     addMissing(r.MissingSample, o.MissingSample),
	}
}
