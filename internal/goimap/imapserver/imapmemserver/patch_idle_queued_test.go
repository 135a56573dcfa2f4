package imapmemserver_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"
)

// lateIdleSession starts IDLE's wait a while after the server has sent
// "+ idling", as a busy server's goroutine may: what arrives meanwhile
// must still be announced.
type lateIdleSession struct {
	imapserver.Session
	started chan struct{} // closed when Idle has been called, before it waits
}

func (s *lateIdleSession) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	close(s.started)
	time.Sleep(100 * time.Millisecond) // the other connection appends meanwhile
	return s.Session.Idle(w, stop)
}

// idle-queued.patch: a message appended after "+ idling" and before the
// session's Idle registered for updates is announced at once, not with the
// next update (beta.8: only then, here never: the test times out).
func TestPatchIdleQueuedUpdateAnnounced(t *testing.T) {
	mem := imapmemserver.New()
	user := imapmemserver.NewUser("u", "p")
	if err := user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	mem.AddUser(user)
	late := make(chan *lateIdleSession, 4)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			s := &lateIdleSession{Session: mem.NewSession(), started: make(chan struct{})}
			late <- s
			return s, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	idler := dialScript(t, ln)
	idlerSession := <-late
	idler.command("a", "LOGIN u p")
	idler.command("b", "SELECT INBOX")
	other := dialScript(t, ln)
	<-late
	other.command("a", "LOGIN u p")

	idler.send("c IDLE\r\n")
	if cont := idler.line(); !strings.HasPrefix(cont, "+") {
		t.Fatalf("IDLE: %q, want a continuation request", cont)
	}
	<-idlerSession.started
	other.appendMessage("b", "Subject: x\r\n\r\n")

	if update := idler.line(); update != "* 1 EXISTS" {
		t.Fatalf("while idling: %q, want * 1 EXISTS", update)
	}
	idler.send("DONE\r\n")
	for !strings.HasPrefix(idler.line(), "c ") {
	}
}
