package imapclient_test

// Tests of mailbench's envelope-into.patch (internal/goimap/PATCHES.md):
// NextInto decodes each message's envelope into its buffer's own, and the
// envelopes it gives are those Next gives (TestPatchFetchInto compares
// them message by message).

import (
	"fmt"
	"net"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

// A FETCH of n messages with ENVELOPE costs, beyond the same FETCH
// without it, the envelope's strings, not a new Envelope per message as
// well.
func TestPatchEnvelopeIntoAllocations(t *testing.T) {
	const n = 20
	// The answers are made once, so that the server allocates as much
	// for either FETCH.
	answers := map[bool][]string{}
	for _, withEnvelope := range []bool{false, true} {
		for i := 1; i <= n; i++ {
			env := ""
			if withEnvelope {
				env = fmt.Sprintf(` ENVELOPE ("Thu, 03 Dec 2026 10:00:00 +0000" "subject number %d" NIL NIL NIL NIL NIL NIL NIL "<id-%d@mailbench.test>")`, i, i)
			}
			answers[withEnvelope] = append(answers[withEnvelope], fmt.Sprintf(`* %d FETCH (UID %d FLAGS (\Seen)%s)`, i, i, env))
		}
	}
	clientConn := scriptedServer(t, "* OK [CAPABILITY IMAP4rev1] hi", func(_ net.Conn, tag, rest string) []string {
		return append(answers[contains(rest, "ENVELOPE")], tag+" OK done")
	})
	c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: true, SkipEnvelopeAddresses: true, SkipEnvelopeDate: true})
	defer c.Close()
	var set imap.SeqSet
	set.AddRange(1, n)
	var buf imapclient.FetchMessageBuffer
	withEnvelope := &imap.FetchOptions{UID: true, Flags: true, Envelope: true}
	cmd := c.Fetch(set, withEnvelope)
	for cmd.NextInto(&buf, 1<<16) {
		if buf.Envelope == nil || buf.Envelope.MessageID != fmt.Sprintf("id-%d@mailbench.test", buf.SeqNum) ||
			buf.Envelope.Subject != fmt.Sprintf("subject number %d", buf.SeqNum) {
			t.Fatalf("message %d: envelope %+v", buf.SeqNum, buf.Envelope)
		}
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	allocs := func(opts *imap.FetchOptions) float64 {
		return testing.AllocsPerRun(20, func() {
			cmd := c.Fetch(set, opts)
			for cmd.NextInto(&buf, 1<<16) {
			}
			if err := cmd.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	base := allocs(&imap.FetchOptions{UID: true, Flags: true})
	with := allocs(withEnvelope)
	perMessage := (with - base) / n
	t.Logf("%.0f allocations per FETCH of %d without ENVELOPE, %.0f with: %.2f per envelope", base, n, with, perMessage)
	// Its strings only: measured 1.15 (the message id, and a subject now
	// and then: short quoted strings come from the decoder's atom cache
	// when their slot holds them); 2.15 with a new Envelope per message.
	if perMessage > 1.5 {
		t.Errorf("%.2f allocations per envelope, want at most 1.5 (its strings, no Envelope)", perMessage)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
