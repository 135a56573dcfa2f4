// Package delivery is a run's delivery accounting as data: the
// reconciliation of every accepted message (Reconciliation: delivered,
// relayed, missing, unverified, duplicated, corrupted, late), a shard's
// remote deliveries still to be matched against a standalone sink
// (Pending, ReconcileSink), the sink's record of what arrived (SinkReport,
// RecordedArrival) and the server's clock against mailbench's
// (ClockCheck).
//
// It imports no protocol code: the ledger, the IMAP checkers and the sink
// fill these values in, and the report reads them, so reading, merging and
// rendering a report links no IMAP or SMTP stack. Nothing here performs
// I/O except ReadSinkReport and WriteSinkReport, on the reader and writer
// they are given.
package delivery
