package smtpclient

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testutil"
	"github.com/mailbench/mailbench/measure"
)

// FuzzServerReplies runs a whole Connect (with AUTH PLAIN) and Send against
// a server whose banner and replies are fuzzed. Whatever the server says,
// the client must return within its deadline, classify any error, and
// never put the password in an error.
func FuzzServerReplies(f *testing.F) {
	f.Add("220 ok\r\n", "250-x\r\n250 AUTH PLAIN\r\n", "235 ok\r\n", "250 ok\r\n", "354 go\r\n")
	f.Add("220-a\r\n220 b\r\n", "250 ok\r\n", "535 5.7.8 "+testPassword+"\r\n", "", "")
	f.Add("554 no\r\n", "", "", "", "")
	f.Add("220\r\n", "250 ok\r\n", "334 \r\n", "999 "+testPassword+"\r\n", "250\n")
	f.Add("2", "250 ok", "x", "\r\n", "354")
	f.Fuzz(func(t *testing.T, banner, ehlo, auth, ok, data string) {
		addr := scriptedServer(t, func(c net.Conn, done <-chan struct{}) {
			io.WriteString(c, banner)
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				cmd := strings.ToUpper(line)
				switch {
				case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
					io.WriteString(c, ehlo)
				case strings.HasPrefix(cmd, "AUTH"):
					io.WriteString(c, auth)
				case strings.HasPrefix(cmd, "DATA"):
					io.WriteString(c, data)
				default:
					io.WriteString(c, ok)
				}
			}
		})
		const timeout = 80 * time.Millisecond
		start := time.Now()
		c, err := Connect(context.Background(), Config{
			Address: addr, Timeout: timeout, Auth: AuthPlain, Username: testUser, Password: testPassword,
		})
		check := func(what string, err error) {
			if time.Since(start) > timeout+time.Second {
				t.Fatalf("%s returned after %v", what, time.Since(start))
			}
			if err == nil {
				return
			}
			if measure.Classify(err) == measure.OK {
				t.Fatalf("%s: error %v classified OK", what, err)
			}
			testutil.CheckNoSecret(t, err, nil, testUser, testPassword)
		}
		check("Connect", err)
		if err != nil {
			return
		}
		defer c.Close()
		start = time.Now()
		_, err = c.Send(context.Background(), "a@example.test", []string{"b@example.test"}, strings.NewReader(testMsg))
		check("Send", err)
		start = time.Now()
		check("Quit", c.Quit(context.Background()))
	})
}
