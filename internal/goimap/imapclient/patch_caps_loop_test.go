package imapclient_test

// Test for mailbench's caps-loop.patch: a capability list with a '(' in
// it (a hostile or broken server) is an error, in the greeting and in a
// CAPABILITY response, for both reading modes; beta.8 spun forever on it,
// with every byte already read, so no deadline could stop it.

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap/imapclient"
)

func TestPatchCapsLoop(t *testing.T) {
	for _, readInCaller := range []bool{false, true} {
		for _, tc := range []struct {
			name, greeting string
			capability     bool // send CAPABILITY and wait for it
		}{
			{"greeting", "* OK [CAPABILITY IMAP4rev1 IDLE (] hi", false},
			{"greeting, two spaces", "* OK [CAPABILITY IMAP4rev1  (] hi", false},
			{"CAPABILITY", "* OK hi", true},
		} {
			clientConn := scriptedServer(t, tc.greeting, func(_ net.Conn, tag, rest string) []string {
				if strings.HasPrefix(rest, "CAPABILITY") {
					return []string{"* CAPABILITY IMAP4rev1 IDLE (x)", tag + " OK done"}
				}
				return []string{tag + " OK"}
			})
			c := imapclient.New(clientConn, &imapclient.Options{ReadInCaller: readInCaller})
			done := make(chan error, 1)
			go func() {
				err := c.WaitGreeting()
				if err == nil && tc.capability {
					_, err = c.Capability().Wait()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("%s, ReadInCaller %v: no error", tc.name, readInCaller)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s, ReadInCaller %v: the client is still reading after 10 s", tc.name, readInCaller)
			}
			c.Close()
		}
	}
}
