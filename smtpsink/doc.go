// Package smtpsink is mailbench's SMTP sink: the mail server for the remote
// domain, to which the server under test relays every message addressed
// outside its local domain.
//
// The sink accepts any sender and any recipient, counts connections,
// messages, recipients and bytes, and discards message bodies unless
// Options.SaveDir is set. It never keeps a body in memory: the header is
// scanned for the fields below (with go-message/textproto's rules, without
// building the whole header) while the body streams through the msgsum
// hasher (and, with SaveDir, into a file).
//
// From the header stamped by mailbench's message generator it learns the
// message id (X-Mailbench-Id), when the generator sent it (X-Mailbench-Sent,
// RFC 3339 with nanoseconds) and the body checksum (X-Mailbench-Sum). It
// records the relay delay, Received − Sent, in an HDR histogram and reports
// each accepted message as an delivery.Arrival to an optional hook, so that the
// benchmark can compute Delivery Time (remote) and check integrity.
//
// Fault injection (Options.Faults) makes the sink slow or make it refuse a
// share of the messages, to exercise the server's queueing and retry paths.
//
// Every network operation has a deadline: each command line, and each
// message's DATA as a whole, must arrive within ReadTimeout, however it
// trickles in; a read that times out ends the connection (421). Each reply
// must be written within WriteTimeout. When MaxConnections are open, a new
// connection takes the place of the one that has sent nothing for longest,
// if that is a second or more (it gets a 421: a crowd of slow or idle
// clients cannot keep out one with mail); otherwise the new one gets a 421
// and is closed. Bad input gets an SMTP error reply; the sink keeps
// serving.
//
// The sink is built on github.com/mailbench/mailbench/internal/gosmtp's server.
package smtpsink
