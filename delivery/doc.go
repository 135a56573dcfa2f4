// Package delivery is a run's delivery accounting: the message id every
// part of a run names a message by (NewID, ParseID); what the IMAP reads
// and the SMTP sink learnt of a message (MessageInfo, BodyInfo, Arrival);
// the Ledger that accounts for every accepted message; the reconciliation
// of every accepted message (Reconciliation: delivered, relayed, missing,
// unverified, duplicated, corrupted, late); a shard's remote deliveries
// still to be matched against a standalone sink (Pending, ReconcileSink);
// the sink's record of what arrived (SinkReport, RecordedArrival); and the
// server's clock against mailbench's (ClockCheck).
//
// It imports no protocol code: the IMAP clients, the watchers and the sink
// fill these values in, and the report reads them, so reading, merging and
// rendering a report links no IMAP or SMTP stack. Nothing here performs
// I/O except ReadSinkReport and WriteSinkReport, on the reader and writer
// they are given.
//
// # The ledger
//
// The Ledger accounts for every message a mailbench run submits: each
// must be found once, intact, at every recipient the server accepted, and
// its delivery is timed.
//
// # What is recorded
//
// The Ledger learns what the server accepted (Accepted, Rejected), what
// IMAP reads saw in INBOXes (SeenLocal from range FETCHes, BodyRead from
// FETCH BODY[]), and what the SMTP sink received (ArrivedRemote, the
// smtpsink Options.OnMessage hook). Messages are matched by their
// X-Mailbench-Id (NewID: run id and a dense sequence number); ids
// of other runs and population messages ("init-…") are ignored.
//
// # Delivery Time
//
// Delivery Time (local) is from the server's acceptance of the message
// (the final 250 to DATA) until it is visible to IMAP in the recipient's
// INBOX. Sessions visit an INBOX only every few minutes, so the time of the
// first sighting would measure how often users look, not the server. The
// ledger times a local delivery, best source first, by:
//
//   - its announcement (Announced): a watched INBOX (idlewatch, IMAP
//     IDLE or a fast poll) reported the EXISTS that made it visible;
//     delivery = max(announcedAt − acceptance, 0), to the millisecond
//     (Reconciliation.TimedByAnnouncement);
//
//   - its INTERNALDATE, the server's own arrival stamp, which IMAP gives
//     in whole seconds, truncated: the ledger takes the middle of that
//     second, so the error is ±0.5 s rather than 0 to 1 s low, bounded by
//     the sighting (TimedByInternalDate):
//
//     delivery = clamp(INTERNALDATE + 0.5 s − acceptance, 0, observedAt − acceptance)
//
//   - its first sighting, at Finish, when it was only ever seen without an
//     INTERNALDATE (UID FETCH does not ask for it): an upper bound
//     (TimedByObservation).
//
// A delivery already timed keeps its time. A delivery whose time exceeds
// the delivery limit (SetLimits) is late (Reconciliation.LateLocal,
// LateRemote): it was found, and it is not lost.
//
// Delivery Time (remote) is from acceptance until the sink received the
// relayed message (Arrival.Received), per remote recipient.
//
// Each (message, recipient) delivery yields one measure.Observation of
// function measure.DeliveryLocal or measure.DeliveryRemote, with Start =
// acceptance, so that the recorder places it in the phase the message was
// sent in, like any other operation.
//
// # Integrity
//
// A delivery found under a second UID in the same INBOX, or arriving at the
// sink twice for the same recipient, is duplicated; one whose body checksum
// (msgsum) differs from the X-Mailbench-Sum header is corrupted. Both are
// counted once per  Local corruption is found only by body reads
// (FETCH_NUM_BODYALL of read sessions); the Checker reads headers only.
//
// # Memory
//
// Records are fixed-size and kept in 4096-entry chunks indexed by sequence
// number: 16 bytes per message and 16 per recipient, no strings, no maps
// per message. A million messages with 1.6 recipients each take 40 MiB
// (TestMemoryPerMillion).
//
// # Lost, late, and deleted by the workload
//
// A delivery is lost when it is not found: the orchestrator settles (the
// deliverycheck Checker looks for what is Outstanding) until every
// delivery is found or its delivery limit has passed, plus a margin, so a
// slow server's mail is found late rather than counted lost.
//
// Cleanup sessions delete the two oldest INBOX messages; with a small
// population or many sessions per user they can expunge run mail before
// anything else saw it. They report what they are about to delete
// (Deleted, from an untimed FETCH of the messages' X-Mailbench-Id before
// the STORE): such a delivery counts as deleted by the workload
// (Reconciliation.DeletedByWorkload), not lost, and has no delivery time.
//
// Nothing in this package performs I/O except the Checker.
package delivery
