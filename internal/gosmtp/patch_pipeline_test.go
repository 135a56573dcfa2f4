package smtp

// Test of mailbench's pipeline.patch: Client.MailRcptData sends MAIL, the
// RCPTs and DATA in one write when the server advertises PIPELINING, and
// must come to what go-smtp v0.25.1's Mail, Rcpt and Data calls in turn
// come to: the same recipients accepted, the same refusals, the same bytes
// on the wire for a transaction that carries a message, and no message
// for one that does not.

import (
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// pipelineCase is one transaction as the server answers it.
type pipelineCase struct {
	name  string
	to    []string
	mail  string   // MAIL's reply
	rcpts []string // one reply per RCPT
	data  string   // DATA's reply
	// what the caller should see
	wantAccepted []string
	wantErrCode  int  // MAIL's or DATA's refusal; 0: none
	wantNoRcpt   bool // ErrNoRecipient
}

var pipelineCases = []pipelineCase{
	{name: "one recipient", to: []string{"b@y.test"},
		mail: "250 ok", rcpts: []string{"250 ok"}, data: "354 go",
		wantAccepted: []string{"b@y.test"}},
	{name: "three, the second refused", to: []string{"a@y.test", "b@y.test", "c@y.test"},
		mail: "250 ok", rcpts: []string{"250 ok", "550 5.1.1 no such user", "251 forwarded"}, data: "354 go",
		wantAccepted: []string{"a@y.test", "c@y.test"}},
	{name: "a temporary refusal", to: []string{"a@y.test", "b@y.test"},
		mail: "250 ok", rcpts: []string{"450 4.2.1 try later", "250 ok"}, data: "354 go",
		wantAccepted: []string{"b@y.test"}},
	{name: "every recipient refused", to: []string{"a@y.test", "b@y.test"},
		mail: "250 ok", rcpts: []string{"550 no", "451 later"}, data: "503 5.5.1 no valid recipients",
		wantErrCode: 503, wantNoRcpt: true},
	{name: "MAIL refused", to: []string{"a@y.test"},
		mail: "452 4.3.1 queue full", rcpts: []string{"503 5.5.1 MAIL first"}, data: "503 5.5.1 MAIL first",
		wantErrCode: 452},
	{name: "DATA refused", to: []string{"a@y.test"},
		mail: "250 ok", rcpts: []string{"250 ok"}, data: "451 4.3.0 local error",
		wantAccepted: []string{"a@y.test"}, wantErrCode: 451},
	{name: "multi-line replies", to: []string{"a@y.test", "b@y.test"},
		mail: "250-sender\r\n250 ok", rcpts: []string{"250-one\r\n250 two", "550-no\r\n550 such user"}, data: "354-go\r\n354 ahead",
		wantAccepted: []string{"a@y.test"}},
}

// scriptReplies is the server's side of c: greeting, EHLO, then the replies.
func (pc pipelineCase) script(pipelining bool) string {
	ehlo := "250-x.test\r\n250 8BITMIME\r\n"
	if pipelining {
		ehlo = "250-x.test\r\n250-PIPELINING\r\n250 8BITMIME\r\n"
	}
	s := "220 hi\r\n" + ehlo + pc.mail + "\r\n"
	for _, r := range pc.rcpts {
		s += r + "\r\n"
	}
	return s + pc.data + "\r\n250 queued\r\n"
}

type transactionResult struct {
	accepted []string
	refused  []int // the reply codes of the refused recipients, in order
	errCode  int
	noRcpt   bool
	sent     bool   // a message went out
	wire     []byte // everything written after EHLO
	writes   [][]byte
}

func codeOf(err error) int {
	var se *SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

var pipelineBody = []byte("Subject: x\r\n\r\n.leading dot\r\nbody\r\n")

// inTurn runs the transaction as a caller of go-smtp v0.25.1 does: Mail,
// Rcpt for each recipient, and Data when one was accepted.
func inTurn(t *testing.T, pc pipelineCase) transactionResult {
	t.Helper()
	conn, c := greetedScript(t, pc.script(false))
	var r transactionResult
	if err := c.Mail("s@x.test", nil); err != nil {
		r.errCode = codeOf(err)
		r.finish(t, nil, conn)
		return r
	}
	for _, to := range pc.to {
		if err := c.Rcpt(to, nil); err != nil {
			r.refused = append(r.refused, codeOf(err))
			continue
		}
		r.accepted = append(r.accepted, to)
	}
	if len(r.accepted) > 0 {
		w, err := c.Data()
		if err != nil {
			r.errCode = codeOf(err)
		}
		r.finish(t, w, conn)
		return r
	}
	r.finish(t, nil, conn)
	return r
}

// greetedScript is a client that has greeted a server playing script.
func greetedScript(t *testing.T, script string) (*scriptConn, *Client) {
	t.Helper()
	conn := &scriptConn{replies: strings.NewReader(script)}
	c := NewClient(conn)
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	return conn, c
}

// finish sends the message through w when there is one, and records
// what was written after EHLO.
func (r *transactionResult) finish(t *testing.T, w *DataCommand, conn *scriptConn) {
	t.Helper()
	if w != nil {
		w.Write(pipelineBody)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r.sent = true
	}
	r.wire, r.writes = bytes.Join(conn.writes[1:], nil), conn.writes[1:]
}

// withMailRcptData runs the transaction with MailRcptData.
func withMailRcptData(t *testing.T, pc pipelineCase, pipelining bool) transactionResult {
	t.Helper()
	conn, c := greetedScript(t, pc.script(pipelining))
	var r transactionResult
	rcptErrs, w, err := c.MailRcptData("s@x.test", nil, pc.to, nil)
	if len(rcptErrs) != len(pc.to) {
		t.Fatalf("%d recipient errors for %d recipients", len(rcptErrs), len(pc.to))
	}
	if (w == nil) == (err == nil) {
		t.Fatalf("MailRcptData returned data %v and err %v: want exactly one", w, err)
	}
	r.errCode = codeOf(err)
	r.noRcpt = errors.Is(err, ErrNoRecipient)
	mailRefused := codeOf(err) != 0 && pc.mail[0] != '2'
	if !mailRefused {
		for i, e := range rcptErrs {
			if e == nil {
				r.accepted = append(r.accepted, pc.to[i])
			} else {
				r.refused = append(r.refused, codeOf(e))
			}
		}
	}
	r.finish(t, w, conn)
	return r
}

func TestPatchPipelineSameOutcome(t *testing.T) {
	for _, pc := range pipelineCases {
		t.Run(pc.name, func(t *testing.T) {
			want := inTurn(t, pc)
			if want.errCode != pc.wantErrCode && !(pc.wantNoRcpt && want.errCode == 0) {
				t.Fatalf("in turn: error code %d, the case says %d", want.errCode, pc.wantErrCode)
			}
			for _, pipelining := range []bool{true, false} {
				got := withMailRcptData(t, pc, pipelining)
				if strings.Join(got.accepted, ",") != strings.Join(pc.wantAccepted, ",") || strings.Join(want.accepted, ",") != strings.Join(pc.wantAccepted, ",") {
					t.Errorf("pipelining %v: accepted %q, in turn %q, want %q", pipelining, got.accepted, want.accepted, pc.wantAccepted)
				}
				if pc.mail[0] == '2' && !slices.Equal(got.refused, want.refused) {
					t.Errorf("pipelining %v: refusals %v, in turn %v", pipelining, got.refused, want.refused)
				}
				if got.sent != want.sent || got.sent != (len(pc.wantAccepted) > 0 && pc.wantErrCode == 0) {
					t.Errorf("pipelining %v: message sent %v, in turn %v", pipelining, got.sent, want.sent)
				}
				if got.noRcpt != pc.wantNoRcpt {
					t.Errorf("pipelining %v: ErrNoRecipient %v, want %v", pipelining, got.noRcpt, pc.wantNoRcpt)
				}
				switch {
				case pc.wantNoRcpt && pipelining:
					// DATA was sent and refused: its code is the error's
					if got.errCode != 503 {
						t.Errorf("pipelining: error code %d, want DATA's 503", got.errCode)
					}
				case pc.wantNoRcpt:
					if got.errCode != 0 {
						t.Errorf("in turn: error code %d, want ErrNoRecipient alone", got.errCode)
					}
				case got.errCode != pc.wantErrCode:
					t.Errorf("pipelining %v: error code %d, want %d", pipelining, got.errCode, pc.wantErrCode)
				}
				// A transaction that went as far in both ways wrote the same bytes.
				if got.sent || !pipelining {
					if !bytes.Equal(got.wire, want.wire) && (got.sent || pc.mail[0] != '2' || !pc.wantNoRcpt) {
						t.Errorf("pipelining %v: wrote\n%q\nin turn\n%q", pipelining, got.wire, want.wire)
					}
				}
				if pipelining {
					// MAIL, every RCPT and DATA in the first write.
					first := string(got.writes[0])
					wantFirst := "MAIL FROM:<s@x.test> BODY=8BITMIME\r\n"
					for _, to := range pc.to {
						wantFirst += "RCPT TO:<" + to + ">\r\n"
					}
					wantFirst += "DATA\r\n"
					if first != wantFirst {
						t.Errorf("first write %q, want %q", first, wantFirst)
					}
				}
			}
		})
	}
}

// TestPatchPipelineUnexpected354 checks RFC 2920's rule for a server that
// answers DATA with 354 though no recipient was accepted: the client ends
// an empty message and reports ErrNoRecipient.
func TestPatchPipelineUnexpected354(t *testing.T) {
	conn, c := greetedScript(t, "220 hi\r\n250-x\r\n250 PIPELINING\r\n250 ok\r\n550 no\r\n354 go\r\n554 no valid recipients\r\n")
	rcptErrs, w, err := c.MailRcptData("s@x.test", nil, []string{"a@y.test"}, nil)
	if w != nil || !errors.Is(err, ErrNoRecipient) || codeOf(rcptErrs[0]) != 550 {
		t.Fatalf("MailRcptData = %v, %v, %v; want [550], nil, ErrNoRecipient", rcptErrs, w, err)
	}
	if got := string(conn.writes[len(conn.writes)-1]); got != ".\r\n" {
		t.Fatalf("last write %q, want the empty message's end", got)
	}
}

// TestPatchPipelineBrokenConnection: a connection that ends among the
// replies is an I/O error, not a refusal.
func TestPatchPipelineBrokenConnection(t *testing.T) {
	_, c := greetedScript(t, "220 hi\r\n250-x\r\n250 PIPELINING\r\n250 ok\r\n250 ok\r\n")
	_, w, err := c.MailRcptData("s@x.test", nil, []string{"a@y.test", "b@y.test"}, nil)
	if w != nil || err == nil || isReply(err) || !errors.Is(err, io.EOF) {
		t.Fatalf("MailRcptData = %v, %v; want an EOF", w, err)
	}
}

// pipelineBackend refuses recipients whose address starts with "no" and
// keeps the messages it is given.
type pipelineBackend struct {
	mu   sync.Mutex
	msgs []string // "rcpt,rcpt:body"
}

func (be *pipelineBackend) NewSession(*Conn) (Session, error) { return &pipelineSession{be: be}, nil }

type pipelineSession struct {
	be    *pipelineBackend
	rcpts []string
}

func (s *pipelineSession) Mail(string, *MailOptions) error { return nil }
func (s *pipelineSession) Rcpt(to string, _ *RcptOptions) error {
	if strings.HasPrefix(to, "no") {
		return &SMTPError{Code: 550, EnhancedCode: EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.rcpts = append(s.rcpts, to)
	return nil
}
func (s *pipelineSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.be.mu.Lock()
	s.be.msgs = append(s.be.msgs, strings.Join(s.rcpts, ",")+":"+string(b))
	s.be.mu.Unlock()
	return nil
}
func (s *pipelineSession) Reset()        { s.rcpts = nil }
func (s *pipelineSession) Logout() error { return nil }

// TestPatchPipelineWithServer runs pipelined transactions against this
// package's own server over loopback, which advertises PIPELINING: the
// messages arrive with the accepted recipients, and an all-refused
// transaction leaves the connection usable for the next.
func TestPatchPipelineWithServer(t *testing.T) {
	be := &pipelineBackend{}
	srv := NewServer(be)
	srv.Domain = "server.test"
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.CommandTimeout = 5 * time.Second
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Extension("PIPELINING"); !ok {
		t.Fatal("the server does not advertise PIPELINING")
	}
	for i, tc := range []struct {
		to     []string
		want   string // the stored message; "" for none
		noRcpt bool
	}{
		{[]string{"a@y.test", "no1@y.test", "b@y.test"}, "a@y.test,b@y.test:hello 0\r\n", false},
		{[]string{"no2@y.test"}, "", true},
		{[]string{"c@y.test"}, "c@y.test:hello 2\r\n", false},
	} {
		rcptErrs, w, err := c.MailRcptData("s@x.test", nil, tc.to, nil)
		if tc.noRcpt {
			if w != nil || err == nil || codeOf(rcptErrs[0]) != 550 {
				t.Fatalf("transaction %d: %v, %v, %v; want a refusal", i, rcptErrs, w, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		io.WriteString(w, "hello "+string(rune('0'+i))+"\r\n")
		if err := w.Close(); err != nil {
			t.Fatalf("transaction %d: DATA: %v", i, err)
		}
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	want := []string{"a@y.test,b@y.test:hello 0\r\n", "c@y.test:hello 2\r\n"}
	if strings.Join(be.msgs, "|") != strings.Join(want, "|") {
		t.Fatalf("stored %q, want %q", be.msgs, want)
	}
}
