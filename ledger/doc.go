// Package ledger accounts for every message a mailbench run submits: each
// must be found once, intact, at every recipient the server accepted, and
// its delivery is timed.
//
// # What is recorded
//
// The Ledger learns what the server accepted (Accepted, Rejected), what
// IMAP reads saw in INBOXes (SeenLocal from range FETCHes, BodyRead from
// FETCH BODY[]), and what the SMTP sink received (ArrivedRemote, the
// smtpsink Options.OnMessage hook). Messages are matched by their
// X-Mailbench-Id (message.NewID: run id and a dense sequence number); ids
// of other runs and population messages ("init-…") are ignored.
//
// # Delivery Time
//
// Delivery Time (local) is from the server's acceptance of the message
// (the final 250 to DATA) until it is visible to IMAP in the recipient's
// INBOX. Sessions visit an INBOX only every few minutes, so the time of the
// first sighting would measure how often users look, not the server.
// Instead the ledger uses the message's INTERNALDATE, the server's own
// arrival stamp, bounded by the sighting:
//
//	delivery = clamp(INTERNALDATE − acceptance, 0, observedAt − acceptance)
//
// INTERNALDATE has a resolution of one second in IMAP, so local delivery
// times are exact to about ±1 s; a server that stamps the message before
// it answers 250 (the embedded target does) yields 0 s. A delivery seen
// only without an INTERNALDATE (UID FETCH does not ask for it) is timed
// by a later sighting that has one, or at Finish by its first sighting,
// an upper bound counted in Reconciliation.TimedByObservation.
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
// counted once per delivery. Local corruption is found only by body reads
// (FETCH_NUM_BODYALL of read sessions); the Checker reads headers only.
//
// # Memory
//
// Records are fixed-size and kept in 4096-entry chunks indexed by sequence
// number: 16 bytes per message and 16 per recipient, no strings, no maps
// per message. A million messages with 1.6 recipients each take 40 MiB
// (TestMemoryPerMillion).
//
// # Messages expunged before anyone saw them
//
// Cleanup sessions delete the two oldest INBOX messages. Run messages
// arrive at the end of an INBOX, so they reach its head only after every
// older message is gone: with the default profile a user's cleanups remove
// about one message an hour against 50 population messages, and even in
// the quick profile a run's mail is seen by check sessions (newest 20) or
// the Checker long before it becomes the oldest. A delivery expunged
// unseen would be counted lost; this is only plausible with an empty
// population, and the fix then is for the cleanup session to report what
// it deletes (a FETCH of the two messages' X-Mailbench-Id, given to
// SeenLocal) before its STORE.
//
// Nothing in this package performs I/O except the Checker.
package ledger
