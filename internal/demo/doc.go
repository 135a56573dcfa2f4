// Package demo is mailbench's embedded demo system under test: an
// in-memory IMAP server (go-imap v2's imapserver + imapmemserver) and an
// SMTP server (go-smtp) on loopback listeners, so that `mailbench run`
// works with zero set-up and unit tests need no external server. It is a
// demo, not a realistic mail server: mailboxes live in memory, FETCH and
// SEARCH scan whole mailboxes, and nothing persists.
//
// # IMAP
//
// Every user has INBOX, Sent, Drafts and Trash plus Options.Folders
// (hierarchy delimiter "/"), all subscribed, optionally pre-filled by
// Options.Populate. The server advertises IMAP4rev1, UIDPLUS and IDLE
// (RFC 2177: a client in IDLE is told of new mail by EXISTS) and allows
// LOGIN and AUTHENTICATE PLAIN without TLS. It does not advertise MOVE:
// imapmemserver's MOVE sends a spurious EXPUNGE. Mailboxes carry no
// special-use attributes (imapmemserver has no way to set them).
//
// # SMTP
//
// The SMTP server accepts mail from any sender, with or without AUTH PLAIN.
// A recipient in Options.LocalDomain must be a known user's address (else
// 550 5.1.1); the message, with a "Received:" header line prepended and its
// body untouched, is appended to that user's INBOX before the final 250.
// Other domains are relayed, like an MTA does: the message is queued in a
// bounded in-memory queue (451 4.3.0 when full), answered 250, and then
// delivered to Options.RelayAddr by Options.RelayWorkers goroutines (20,
// as Postfix to one destination), each attempt bounded by
// Options.OpTimeout; transient failures are retried a few times, then the
// recipient is given up on and counted in Stats.RelayFailed. A worker keeps
// its connection for its next message, as Postfix's connection cache does
// (until idle 2 s, at most 300 s), and sends MAIL, the RCPTs and DATA in
// one write to a relay host that advertises PIPELINING, as Postfix's smtp
// client does. With no RelayAddr, non-local recipients get 550 5.7.1.
//
// # Faults and stalls
//
// Options.Faults drops, duplicates or corrupts every Nth local delivery,
// or delays local deliveries (Faults.DeliveryDelay: answered 250 at once,
// appended to the INBOX D later), and Target.StallIMAP makes the IMAP server stop answering without
// closing connections, so that the benchmark's delivery accounting and
// timeout handling can be tested against a misbehaving server.
//
// # Latency and contention
//
// Options.Latency adds a fixed delay to chosen commands (LatencyCommands);
// Options.Contention makes those commands wait max(0, active − Knee) ×
// Slope, with active the sessions in progress (IMAP connections, SMTP
// sessions; Target.Active): a server whose response time grows with
// concurrency past a knee, so its capacity is known (see Contention).
//
// # TLS
//
// Options.TLSConfig enables STARTTLS on both servers, or implicit TLS
// (IMAPS, SMTPS: the handshake first, no STARTTLS) on the listener that
// Options.IMAPImplicitTLS or Options.SMTPImplicitTLS selects; the two
// protocols are set independently. A client that does not complete the
// implicit handshake within Options.TLSHandshakeTimeout is disconnected.
// tlsconf.SelfSignedTLS makes a certificate in memory for tests and demos.
//
// The relay client uses STARTTLS when the relay host offers it
// (opportunistic TLS, like an MTA), or implicit TLS or none as
// Options.RelayTLS says; tlsconf.PinnedClientTLS makes it trust exactly the relay
// host's certificate.
//
// Passwords are never logged nor included in errors.
package demo
