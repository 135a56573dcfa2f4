// Package message generates the test mail that mailbench submits over SMTP
// and appends over IMAP: reproducible from a seed, and cheap per message.
//
// At start-up NewGenerator renders, once, a small pool of MIME bodies per size
// bucket with go-message (text/plain below 8 KiB, multipart/mixed with a
// base64 attachment from 8 KiB up). Every body line ends in CRLF and is at
// most 76 characters long, so servers that reject bare LF or long lines
// (go-smtp rejects lines over 2000 bytes) accept them. The pooled bodies are
// byte-identical for the same seed and size buckets.
//
// Each message is a fresh header (Date, From, To, Subject, Message-Id,
// MIME-Version, the body's Content-* fields and the X-Mailbench-Id,
// X-Mailbench-Sent and X-Mailbench-Sum trace fields) followed by a pooled
// body, which is shared and never modified. X-Mailbench-Sum is
// msgsum.BodySum of the body, computed once per pooled body, so a receiver
// can check that the body arrived intact without knowing the seed.
//
// Size accounting: a bucket of S bytes gets bodies of S - HeaderAllowance
// bytes (at least MinBodySize), so that the whole message, header included,
// is about S bytes. The header's real length depends on the envelope; the
// total stays within ±10 % of S for envelopes with up to 3 recipients of
// ordinary length and a subject of up to 80 characters.
//
// Nothing in this package performs network I/O.
package message
