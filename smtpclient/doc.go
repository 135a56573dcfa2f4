// Package smtpclient submits mail over SMTP and times it as the SPECmail2008
// functions "SMTP Connect" and "SMTP Data", reporting each operation to a
// measure.Observer.
//
// It drives go-smtp's client, with three additions that a load generator
// needs:
//
//   - Every network operation has a deadline (Config.Timeout, or the
//     context's deadline when earlier). The deadline is enforced twice: every
//     read and write deadline go-smtp sets on the connection is clamped to it
//     (go-smtp clears its own deadlines between commands and sets none while
//     the body is written), and a watchdog timer closes the connection when
//     it passes, whatever the client is blocked in (dial, TLS handshake,
//     banner, body write). Cancelling the context closes the connection too.
//     An operation cut short this way fails with an error wrapping
//     measure.ErrTimeout (or the context's error when it was cancelled).
//   - The banner and, for STARTTLS, the first EHLO and the STARTTLS exchange
//     are read by this package, so Connect can report where its time went
//     (Client.Breakdown). go-smtp then sees the banner replayed and performs
//     the EHLO that follows TLS itself.
//   - Server replies that refuse a command (*smtp.SMTPError, 4xx/5xx) become
//     *measure.ProtocolError with the reply's code and text, so
//     measure.Classify puts them in the Protocol class. Network failures keep
//     their net error in the chain (class Connection, or TLS for handshake
//     failures).
//
// The password is used only to build the SASL response; it never appears in
// an error, in an observation or in a log. Server replies that happen to echo
// it are redacted.
//
// Partial refusal: when some RCPT TO are refused but at least one is
// accepted, the message goes to the accepted ones, Send succeeds and the
// observation is OK; the refused recipients are listed in SendResult. An
// SMTP Data operation fails (class Protocol) when MAIL FROM is refused, when
// every RCPT TO is refused, or when DATA or its final reply is refused.
package smtpclient
