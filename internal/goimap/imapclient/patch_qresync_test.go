package imapclient

// Tests of mailbench's qresync.patch: SELECT with the QRESYNC parameter
// goes on the wire as RFC 7162 writes it, and a VANISHED response (beta.8:
// "unsupported response type", the connection closed) reaches the
// Vanished handler and leaves the connection usable.

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	imap "github.com/mailbench/mailbench/internal/goimap"
)

// qresyncServer answers one client: SELECT with "* VANISHED (EARLIER)
// 41,43:45", a unilateral FETCH and HIGHESTMODSEQ; NOOP with "* VANISHED
// 7". It records the SELECT line.
func qresyncServer(ln net.Listener, selected chan<- string) {
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
	send("* OK [CAPABILITY IMAP4rev1 CONDSTORE QRESYNC ENABLE] ready")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		tag, rest, _ := strings.Cut(line, " ")
		cmd, _, _ := strings.Cut(rest, " ")
		switch strings.ToUpper(cmd) {
		case "ENABLE":
			send("* ENABLED QRESYNC")
			send("%s OK enabled", tag)
		case "SELECT":
			selected <- rest
			send("* 3 EXISTS")
			send("* OK [UIDVALIDITY 67890007] ok")
			send("* OK [UIDNEXT 46] ok")
			send("* OK [HIGHESTMODSEQ 90060128194045007] ok")
			send("* VANISHED (EARLIER) 41,43:45")
			send("* 2 FETCH (UID 42 FLAGS (\\Seen) MODSEQ (90060128194045006))")
			send("%s OK [READ-WRITE] selected", tag)
		case "NOOP":
			send("* VANISHED 42")
			send("%s OK noop", tag)
		default:
			send("%s BAD unknown command %q", tag, cmd)
		}
	}
}

func TestPatchQResync(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	selected := make(chan string, 1)
	go qresyncServer(ln, selected)
	var mu sync.Mutex
	var got []string
	c, err := DialInsecure(ln.Addr().String(), &Options{UnilateralDataHandler: &UnilateralDataHandler{
		Vanished: func(earlier bool, uids imap.UIDSet) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%v %v", earlier, uids))
			mu.Unlock()
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Enable(imap.CapQResync).Wait(); err != nil {
		t.Fatal(err)
	}
	data, err := c.Select("INBOX", &imap.SelectOptions{QResync: &imap.SelectQResync{UIDValidity: 67890007, ModSeq: 90060115194045000}}).Wait()
	if err != nil {
		t.Fatalf("SELECT (QRESYNC): %v", err)
	}
	if line := <-selected; line != "SELECT INBOX (QRESYNC (67890007 90060115194045000))" {
		t.Errorf("sent %q", line)
	}
	if data.HighestModSeq != 90060128194045007 || data.NumMessages != 3 {
		t.Errorf("select data %+v", data)
	}
	if err := c.Noop().Wait(); err != nil {
		t.Fatalf("NOOP after VANISHED: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"true 41,43:45", "false 42"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Vanished told %q, want %q", got, want)
	}
}
