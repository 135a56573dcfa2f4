// Package imapclient performs the timed IMAP functions of a SPECmail2008
// session over go-imap v2 (github.com/mailbench/mailbench/internal/goimap/imapclient).
//
// Each timed method performs one function, measures it from just before the
// command is written until its tagged reply (and all data) has been read,
// and hands one measure.Observation to Config.Observer (a nil Observer
// records nothing, as `mailbench init` wants). The wire commands:
//
//	Connect             "IMAP Connect"         TCP dial, TLS (implicit, or STARTTLS), greeting,
//	                                            CAPABILITY if the greeting lacks [CAPABILITY],
//	                                            LOGIN user pass | AUTHENTICATE PLAIN,
//	                                            CAPABILITY if the OK lacks [CAPABILITY]
//	SelectInbox         "IMAP SELECT_INBOX"    SELECT INBOX
//	SelectFolder        "IMAP SELECT_FOLDER"   SELECT <folder>
//	List                "IMAP LIST"            LIST "" "*"
//	Lsub                "IMAP LSUB_NULL_WILDCARD"  LSUB "" "*"
//	FetchRangeEnvelope  "IMAP FETCH_RANGE_ENVELOPE_BODYPEEK_HEADERFIELDS_FLAGS_INTERNALDATE_RFC822SIZE_UID"
//	                    FETCH m:n (UID FLAGS INTERNALDATE RFC822.SIZE ENVELOPE BODY.PEEK[HEADER.FIELDS
//	                    ("From" "To" "Subject" "Date" "Message-Id" "X-Mailbench-Id" "X-Mailbench-Sent")])
//	UIDFetchRange       "IMAP UID_FETCH_RANGE_UID_BODYPEEK_HEADERFIELDS_FLAGS_RFC822SIZE"
//	                    UID FETCH a:b (UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS (…same…)])
//	FetchBody           "IMAP FETCH_NUM_BODYALL"   FETCH n (BODY[])  (streamed, body hashed, sets \Seen)
//	Store               "IMAP STORE_NUM_SET_FLAGS_DELETED"      STORE n +FLAGS.SILENT (\Deleted)
//	UIDStore            "IMAP UID_STORE_NUM_SET_FLAGS_DELETED"  UID STORE u +FLAGS.SILENT (\Deleted)
//	Expunge             "IMAP EXPUNGE"         EXPUNGE
//	Append              "IMAP APPEND"          APPEND <mbox> (flags) "date" {n} or {n+} + literal
//
// go-imap orders the FETCH items itself: UID first, the body section last,
// the other atoms in between in an unspecified (map iteration) order; the
// item set is the SPECmail one; header names go out as quoted strings. Untimed helpers (no Observation, same deadline): Create
// (CREATE; NO [ALREADYEXISTS] is success), Subscribe (SUBSCRIBE), Status
// (STATUS mbox (MESSAGES)), Logout (LOGOUT, then close).
//
// # LSUB
//
// go-imap v2 beta.8 has no LSUB method, no raw-command path, and treats an
// untagged `* LSUB` response as a fatal decoding error. Lsub nevertheless
// sends a real `LSUB "" "*"`: the client's net.Conn is a thin wrapper
// (transport) that writes the command line itself, with its own tag
// ("MBL1", "MBL2", …), and takes the `* LSUB` lines and the tagged reply out
// of the byte stream before go-imap reads them; unilateral responses in
// between (e.g. `* 3 EXISTS`) still go to go-imap. The wrapper tracks
// response boundaries (lines and {n} literals) on every read, so the
// interception starts at a response boundary. No LIST fallback is used.
//
// # STARTTLS
//
// With TLS "starttls" the client reads the greeting, sends `MBS1 STARTTLS`
// and performs the handshake itself (so that Client.Breakdown can time TLS
// and report session resumption), then hands the TLS connection to go-imap
// with a replayed greeting that has no [CAPABILITY] code; go-imap therefore
// sends CAPABILITY over TLS, as RFC 3501 requires after STARTTLS.
//
// # Deadlines and errors
//
// go-imap v2 waits forever on a silent server, so every operation runs
// under a watchdog: when Config.Timeout (default 30 s; Connect included)
// elapses, or ctx is done, the connection is closed, the operation returns
// an error wrapping measure.ErrTimeout (or the context's error), and the
// client is unusable: later calls fail with ErrClosed without I/O or
// Observation. A context already done on entry likewise returns its error
// without I/O or Observation. Errors are shaped for measure.Classify: NO/BAD replies are
// *measure.ProtocolError (reachable with errors.As), as are malformed
// replies; I/O failures wrap the underlying error (connection class). An
// operation cut short by cancelling ctx is observed with the context's
// error (context.Canceled classifies as measure.Cancelled: mailbench cut
// it, the server did not fail). The password is never part of an error: Connect
// replaces it by "[redacted]" (measure.RedactedMask) should a server echo
// it.
//
// A Client is not safe for concurrent use; one session goroutine drives it.
package imapclient
