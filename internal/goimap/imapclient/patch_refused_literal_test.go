package imapclient

// Tests of mailbench's refused-literal.patch: a command that the server
// refuses in place of a synchronizing literal's continuation request ends
// with the server's NO, and the connection stays usable.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"

	imap "github.com/mailbench/mailbench/internal/goimap"
)

// refusingServer answers one client on ln as Cyrus did after it started:
// the first APPEND gets "NO System I/O error" instead of a continuation
// request, the others "+ go ahead", and are then accepted; NOOP is OK.
func refusingServer(t *testing.T, ln net.Listener) {
	conn, err := ln.Accept()
	if err != nil {
		return
	}
	defer conn.Close()
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	send := func(format string, a ...any) {
		fmt.Fprintf(w, format+"\r\n", a...)
		w.Flush()
	}
	send("* OK [CAPABILITY IMAP4rev1] refusing server ready")
	literal := regexp.MustCompile(`\{(\d+)\}$`)
	appends := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		tag, rest, _ := strings.Cut(line, " ")
		cmd, _, _ := strings.Cut(rest, " ")
		switch strings.ToUpper(cmd) {
		case "APPEND":
			m := literal.FindStringSubmatch(line)
			if m == nil {
				send("%s BAD no literal", tag)
				continue
			}
			if appends++; appends == 1 {
				send("%s NO System I/O error", tag)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			send("+ go ahead")
			if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
				return
			}
			if _, err := r.ReadString('\n'); err != nil { // the command's CRLF
				return
			}
			send("%s OK APPEND completed", tag)
		case "NOOP":
			send("%s OK NOOP completed", tag)
		default:
			send("%s BAD unknown command %q", tag, cmd)
		}
	}
}

func TestPatchRefusedLiteralKeepsConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go refusingServer(t, ln)
	c, err := DialInsecure(ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := "Subject: hi\r\n\r\nhello\r\n"
	appendOnce := func() error {
		cmd := c.Append("INBOX", int64(len(msg)), nil)
		_, werr := cmd.Write([]byte(msg))
		cerr := cmd.Close()
		if _, err := cmd.Wait(); err != nil {
			return err
		}
		return errors.Join(werr, cerr)
	}
	err = appendOnce()
	var refused *imap.Error
	if !errors.As(err, &refused) || refused.Type != imap.StatusResponseTypeNo || refused.Text != "System I/O error" {
		t.Fatalf("first APPEND: %v, want the server's NO System I/O error", err)
	}
	if err := c.Noop().Wait(); err != nil {
		t.Fatalf("NOOP after the refusal: %v: the connection did not survive it", err)
	}
	if err := appendOnce(); err != nil {
		t.Fatalf("APPEND again: %v", err)
	}
}
