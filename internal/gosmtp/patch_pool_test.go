package smtp

// mailbench patch (conn-buffers.patch): connections served with pooled
// textproto buffers behave exactly as with textproto.NewConn's new ones.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

type poolTestBackend struct {
	mu  sync.Mutex
	log []string
}

func (b *poolTestBackend) NewSession(*Conn) (Session, error) { return &poolTestSession{b: b}, nil }

type poolTestSession struct{ b *poolTestBackend }

func (s *poolTestSession) add(e string) {
	s.b.mu.Lock()
	s.b.log = append(s.b.log, e)
	s.b.mu.Unlock()
}
func (s *poolTestSession) Reset()        { s.add("reset") }
func (s *poolTestSession) Logout() error { s.add("logout"); return nil }
func (s *poolTestSession) Mail(from string, _ *MailOptions) error {
	s.add("mail " + from)
	return nil
}
func (s *poolTestSession) Rcpt(to string, _ *RcptOptions) error {
	if strings.HasPrefix(to, "bad") {
		return &SMTPError{Code: 550, EnhancedCode: EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.add("rcpt " + to)
	return nil
}
func (s *poolTestSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.add(fmt.Sprintf("data %q %v", b, err))
	return err
}

// poolScripts are whole client sides, each written at once: pipelined
// commands, data left unread after QUIT (stale bytes in a pooled reader),
// a message crossing the 4 KiB buffer, an over-long line, a truncated DATA.
var poolScripts = func() []string {
	big := strings.Repeat("0123456789abcdef", 40) + "\r\n"
	return []string{
		"EHLO a\r\nMAIL FROM:<x@a>\r\nRCPT TO:<y@b>\r\nDATA\r\nSubject: 1\r\n\r\nbody\r\n.\r\nQUIT\r\nNOOP\r\nNOOP\r\nRSET\r\n",
		"EHLO b\r\nNOOP\r\nQUIT\r\n",
		"HELO c\r\nMAIL FROM:<x@a>\r\nRCPT TO:<bad@b>\r\nRCPT TO:<z@b>\r\nDATA\r\n" + strings.Repeat(big, 12) + "..dot\r\n.\r\nQUIT\r\nMAIL FROM:<stale@a>\r\n",
		"EHLO d\r\nFOO\r\nNOOP " + strings.Repeat("x", 3000) + "\r\nNOOP\r\n",
		"EHLO e\r\nMAIL FROM:<x@a>\r\nRCPT TO:<y@b>\r\nDATA\r\npartial",
		"EHLO f\r\nQUIT\r\n",
	}
}()

func runPoolScripts(t *testing.T, pooled bool) (transcripts []string, log []string) {
	t.Helper()
	old := poolTextBuffers
	poolTextBuffers = pooled
	defer func() { poolTextBuffers = old }()
	be := &poolTestBackend{}
	s := NewServer(be)
	s.Domain = "pool.test"
	s.MaxLineLength = 2000
	s.ReadTimeout = 5 * time.Second
	s.WriteTimeout = 5 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	for round := 0; round < 3; round++ {
		for _, script := range poolScripts {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, script); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			var out bytes.Buffer
			io.Copy(&out, c)
			c.Close()
			transcripts = append(transcripts, out.String())
		}
	}
	s.Close()
	be.mu.Lock()
	defer be.mu.Unlock()
	return transcripts, append([]string(nil), be.log...)
}

func TestPatchPooledTextBuffersEquivalent(t *testing.T) {
	wantT, wantL := runPoolScripts(t, false)
	gotT, gotL := runPoolScripts(t, true)
	for i := range wantT {
		if gotT[i] != wantT[i] {
			t.Errorf("connection %d (script %d): pooled transcript\n%q\nwant (textproto.NewConn)\n%q", i, i%len(poolScripts), gotT[i], wantT[i])
		}
	}
	if strings.Join(gotL, "\n") != strings.Join(wantL, "\n") {
		t.Errorf("backend saw\n%s\nwant\n%s", strings.Join(gotL, "\n"), strings.Join(wantL, "\n"))
	}
	if !strings.Contains(wantT[0], "221 2.0.0 Bye") || strings.Contains(wantT[1], "Session reset") {
		t.Errorf("unexpected reference transcripts: %q %q", wantT[0], wantT[1])
	}
}

func TestPatchPooledTextBuffersReleased(t *testing.T) {
	c := &Conn{server: NewServer(&poolTestBackend{}), conn: nopConn{}}
	c.init()
	c.releaseText()
	if c.text != nil {
		t.Fatal("releaseText left c.text set")
	}
	c.releaseText() // twice is harmless
}

type nopConn struct{ net.Conn }

func (nopConn) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopConn) Write(p []byte) (int, error) { return len(p), nil }
func (nopConn) Close() error                { return nil }
