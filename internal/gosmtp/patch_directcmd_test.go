package smtp

// Test of mailbench's direct-command.patch: cmdLine (MAIL, RCPT and DATA)
// writes a command as it is, without a format or textproto's sequencer,
// and must write the same bytes and return the same code, message and
// error as cmd (go-smtp v0.25.1's path, kept for the other commands), on
// every kind of reply.

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestPatchDirectCommandSameAsCmd(t *testing.T) {
	replies := []string{
		"250 2.1.0 Ok\r\n",
		"250-first\r\n250-second\r\n250 last\r\n",
		"354 End data with <CR><LF>.<CR><LF>\r\n",
		"550 5.1.1 No such user\r\n",
		"451-4.3.0 try\r\n451 4.3.0 later\r\n",
		"421 4.4.2 closing\r\n",
		"250\r\n",
		"250 \r\n",
		"25 short\r\n",
		"abc not a reply\r\n",
		"250-one\r\n251 other code\r\n",
		"250 no line end",
		"",
	}
	lines := []string{"MAIL FROM:<a@x.test> SIZE=42", "RCPT TO:<b@y.test>", "DATA", "100% %s %d"}
	for _, expect := range []int{250, 25, 354} {
		for _, reply := range replies {
			for _, line := range lines {
				name := fmt.Sprintf("%d/%q/%q", expect, reply, line)
				viaCmd := runCommand(t, reply, func(c *Client) (int, string, error) { return c.cmd(expect, "%s", line) })
				viaLine := runCommand(t, reply, func(c *Client) (int, string, error) { return c.cmdLine(expect, line) })
				if viaCmd != viaLine {
					t.Errorf("%s:\ncmd     %s\ncmdLine %s", name, viaCmd, viaLine)
				}
			}
		}
	}
}

// runCommand sends one command through send on a Client whose server
// answers reply, and describes what was written and returned.
func runCommand(t *testing.T, reply string, send func(*Client) (int, string, error)) string {
	t.Helper()
	conn := &scriptConn{replies: strings.NewReader("220 hi\r\n" + reply)}
	c := NewClient(conn)
	if _, _, err := c.readResponse(220); err != nil { // the greeting, as Hello would
		t.Fatal(err)
	}
	code, msg, err := send(c)
	return fmt.Sprintf("wrote %q code %d msg %q err %#v", bytes.Join(conn.writes, nil), code, msg, err)
}

// TestPatchDirectCommandTransaction: Mail, Rcpt and Data write one
// command each, in order, and a refused RCPT is the server's reply.
func TestPatchDirectCommandTransaction(t *testing.T) {
	conn := &scriptConn{replies: strings.NewReader("220 hi\r\n250 hello\r\n250 ok\r\n550 5.1.1 unknown\r\n250 ok\r\n354 go\r\n")}
	c := NewClient(conn)
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("a@x.test", nil); err != nil {
		t.Fatal(err)
	}
	err := c.Rcpt("nobody@y.test", nil)
	if se, ok := err.(*SMTPError); !ok || se.Code != 550 || se.Message != "unknown" {
		t.Fatalf("refused RCPT: %#v", err)
	}
	if err := c.Rcpt("b@y.test", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Data(); err != nil {
		t.Fatal(err)
	}
	want := []string{"EHLO client.test\r\n", "MAIL FROM:<a@x.test>\r\n", "RCPT TO:<nobody@y.test>\r\n", "RCPT TO:<b@y.test>\r\n", "DATA\r\n"}
	var got []string
	for _, w := range conn.writes {
		got = append(got, string(w))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
