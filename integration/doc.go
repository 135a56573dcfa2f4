// Package integration holds mailbench's tests against a real server under
// test: Dovecot (IMAP 127.0.0.1:1143) and Postfix (SMTP 127.0.0.1:2525)
// as set up by scripts/sut/up, relaying remote.test to 127.0.0.1:2526.
//
// The tests skip when the SUT does not answer, unless the environment sets
// MAILBENCH_REQUIRE_SUT=1 (CI does), in which case its absence fails them.
// They use the SUT's accounts user1..user40 (password MAILBENCH_PASSWORD,
// default "mailbench") and leave user31..user40 cleaned; they need
// 127.0.0.1:2526 free for their sink.
package integration
