// Package integration holds mailbench's tests against real servers under
// test: Dovecot (IMAP 127.0.0.1:1143) and Postfix (SMTP 127.0.0.1:2525)
// as set up by scripts/sut/up, and Cyrus IMAP (127.0.0.1:3143) and Exim
// (127.0.0.1:3525) as set up by scripts/sut2/up, both relaying remote.test
// to 127.0.0.1:2526.
//
// The tests of a pair skip when it does not answer, unless the environment
// sets MAILBENCH_REQUIRE_SUT=1 (Dovecot+Postfix) or MAILBENCH_REQUIRE_SUT2=1
// (Cyrus+Exim), as CI does, in which case its absence fails them. They use
// the accounts user1..user43 (password MAILBENCH_PASSWORD, default
// "mailbench") and leave user31..user43 cleaned; they need 127.0.0.1:2526
// free for their sink.
package integration
