package smtp

// mailbench patch (reply-format.patch): replies are formatted without fmt
// and written with one flush per reply; the bytes on the wire are those of
// v0.25.1, whose writeResponse is kept below as origWriteResponse.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
)

// origWriteResponse is Conn.writeResponse of go-smtp v0.25.1 without the
// write deadline, writing to text.
func origWriteResponse(text *textproto.Conn, code int, enhCode EnhancedCode, lines ...string) {
	if enhCode == EnhancedCodeNotSet {
		cat := code / 100
		switch cat {
		case 2, 4, 5:
			enhCode = EnhancedCode{cat, 0, 0}
		default:
			enhCode = NoEnhancedCode
		}
	}
	lines = strings.Split(strings.Join(lines, "\n"), "\n")
	lastLineIndex := len(lines) - 1
	for i := 0; i < lastLineIndex; i++ {
		text.PrintfLine("%d-%v", code, lines[i])
	}
	if enhCode == NoEnhancedCode {
		text.PrintfLine("%d %v", code, lines[lastLineIndex])
	} else {
		text.PrintfLine("%d %v.%v.%v %v", code, enhCode[0], enhCode[1], enhCode[2], lines[lastLineIndex])
	}
}

// countingWriter counts the writes that reach the connection.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// replyOutputs returns what v0.25.1's writeResponse and the patched one
// write for one reply, and the patched one's number of writes.
func replyOutputs(code int, enhCode EnhancedCode, lines []string) (orig, patched string, writes int) {
	var o bytes.Buffer
	origWriteResponse(textproto.NewConn(struct {
		io.Reader
		io.Writer
		io.Closer
	}{nil, &o, nil}), code, enhCode, lines...)
	var p countingWriter
	c := &Conn{server: &Server{}} // WriteTimeout 0: no deadline, so no net.Conn needed
	c.text = textproto.NewConn(struct {
		io.Reader
		io.Writer
		io.Closer
	}{nil, &p, nil})
	c.writeResponse(code, enhCode, lines...)
	return o.String(), p.String(), p.writes
}

func TestPatchReplyFormatEquivalent(t *testing.T) {
	codes := []int{0, 7, 99, 220, 221, 250, 252, 354, 421, 451, 500, 554, 999, 1000, 12345, -1, -250}
	enhs := []EnhancedCode{EnhancedCodeNotSet, NoEnhancedCode, {2, 0, 0}, {5, 7, 1}, {4, 44, 444}, {0, 0, 1}, {-2, 3, -4}, {1 << 40, 0, 0}}
	texts := [][]string{
		nil,
		{""},
		{"Bye"},
		{"Go ahead. End your data with <CR><LF>.<CR><LF>"},
		{"two\nlines"},
		{"trailing newline\n"},
		{"\nleading newline"},
		{"\n"},
		{"a", "b", "c"},
		{"", ""},
		{"Hello x", "PIPELINING", "8BITMIME", "SIZE 33554432"},
		{"multi\nline", "and\nmore\n", ""},
		{"cr\r inside", "percent %d %v %s %%", "unicode é ✓", "\x00nul"},
		{strings.Repeat("long ", 1000)},
		{strings.Repeat("x", 4095), strings.Repeat("y", 4097)},
	}
	for _, code := range codes {
		for _, enh := range enhs {
			for _, lines := range texts {
				orig, got, writes := replyOutputs(code, enh, lines)
				if got != orig {
					t.Fatalf("writeResponse(%d, %v, %q):\n got %q\nwant %q", code, enh, lines, got, orig)
				}
				if writes != 1 && len(orig) <= 4096 {
					t.Errorf("writeResponse(%d, %v, %q): %d writes, want 1", code, enh, lines, writes)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(3))
	alphabet := []string{"a", "bc", " ", "\n", "\r", "%", "%v", "-", ".", "é", "\x00", ""}
	for i := 0; i < 20000; i++ {
		lines := make([]string, rng.Intn(5))
		for j := range lines {
			var b strings.Builder
			for k := rng.Intn(8); k > 0; k-- {
				b.WriteString(alphabet[rng.Intn(len(alphabet))])
			}
			lines[j] = b.String()
		}
		code := rng.Intn(1200) - 100
		enh := EnhancedCode{rng.Intn(12) - 1, rng.Intn(12) - 1, rng.Intn(12) - 1}
		if rng.Intn(3) == 0 {
			enh = EnhancedCodeNotSet
		}
		orig, got, _ := replyOutputs(code, enh, lines)
		if got != orig {
			t.Fatalf("writeResponse(%d, %v, %q):\n got %q\nwant %q", code, enh, lines, got, orig)
		}
	}
}

// replyTestSession accepts AUTH PLAIN so that the EHLO reply has an AUTH
// line.
type replyTestSession struct{ poolTestSession }

func (s *replyTestSession) AuthMechanisms() []string { return []string{sasl.Plain, "X-TEST"} }
func (s *replyTestSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if password != "pw" {
			return errors.New("bad password")
		}
		return nil
	}), nil
}

type replyTestBackend struct{ poolTestBackend }

func (b *replyTestBackend) NewSession(*Conn) (Session, error) {
	return &replyTestSession{poolTestSession{b: &b.poolTestBackend}}, nil
}

// replyScripts drive every reply whose formatting the patch touches (the
// greeting, HELO, EHLO with each capability, MAIL, RCPT, the recipient
// limit) and some it doesn't.
var replyScripts = []string{
	"EHLO a.test\r\nMAIL FROM:<x@a>\r\nRCPT TO:<y@b>\r\nRCPT TO:<z@b>\r\nRCPT TO:<w@b>\r\nDATA\r\nSubject: 1\r\n\r\nbody\r\n.\r\nQUIT\r\n",
	"HELO b.test\r\nMAIL FROM:<>\r\nRCPT TO:<bad@b>\r\nRSET\r\nNOOP\r\nVRFY x\r\nQUIT\r\n",
	"LHLO c.test\r\nMAIL FROM:<x@a>\r\nRCPT TO:<y@b>\r\nDATA\r\nx\r\n.\r\nQUIT\r\n",
	"EHLO\r\nHELO\r\nFOO bar\r\nMAIL\r\nBDAT x\r\nEXPN\r\nHELP\r\n",
	"EHLO d.test\r\nAUTH PLAIN AHUAcHc=\r\nMAIL FROM:<x@a> SIZE=99999999999\r\nMAIL FROM:<x@a> BODY=8BITMIME SIZE=10\r\nRCPT TO:<y@b> NOTIFY=NEVER\r\nQUIT\r\n",
}

// replyConfigs are servers whose EHLO replies differ.
var replyConfigs = []struct {
	name string
	set  func(*Server)
}{
	{"defaults", func(s *Server) {}},
	{"limits", func(s *Server) { s.MaxMessageBytes, s.MaxRecipients = 33554432, 2 }},
	{"big limits", func(s *Server) { s.MaxMessageBytes, s.MaxRecipients = 1<<62+12345, 1000 }},
	{"no size", func(s *Server) { s.MaxMessageBytes = 0 }},
	{"everything", func(s *Server) {
		s.Domain = "mx.example.test"
		s.MaxRecipients, s.MaxMessageBytes = 7, 1234567
		s.TLSConfig = &tls.Config{}
		s.AllowInsecureAuth = true
		s.EnableSMTPUTF8, s.EnableREQUIRETLS, s.EnableBINARYMIME, s.EnableDSN = true, true, true, true
		s.EnableRRVS, s.EnableDELIVERBY, s.EnableMTPRIORITY = true, true, true
		s.MinimumDeliverByTime = 90 * time.Second
		s.MtPriorityProfile = PriorityMIXER
	}},
	{"deliverby, mt-priority unset", func(s *Server) { s.EnableDELIVERBY, s.EnableMTPRIORITY = true, true }},
	{"lmtp", func(s *Server) { s.LMTP = true; s.Domain = "lmtp.test" }},
}

// replyTranscripts serves every script under every config, one
// connection each, and returns the server's side of each.
func replyTranscripts(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	for _, cfg := range replyConfigs {
		s := NewServer(&replyTestBackend{})
		s.Domain = "reply.test"
		s.ReadTimeout, s.WriteTimeout = 5*time.Second, 5*time.Second
		cfg.set(s)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(ln)
		for i, script := range replyScripts {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, script); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			out, _ := io.ReadAll(bufio.NewReader(c))
			c.Close()
			fmt.Fprintf(&all, "=== %s, script %d\n%s", cfg.name, i, out)
		}
		s.Close()
	}
	return all.String()
}

var updateReplyGolden = flag.Bool("update-reply-golden", false, "rewrite testdata/replies.golden (only with v0.25.1's conn.go)")

// TestPatchReplyTranscripts compares whole server transcripts with
// testdata/replies.golden, which v0.25.1's conn.go (before the patch)
// wrote with -update-reply-golden.
func TestPatchReplyTranscripts(t *testing.T) {
	got := replyTranscripts(t)
	const golden = "testdata/replies.golden"
	if *updateReplyGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("transcripts differ from %s at line %d:\n got %q\nwant %q", golden, i+1, g, w)
			}
		}
	}
	for _, want := range []string{"220 reply.test ESMTP Service Ready", "220 lmtp.test LMTP Service Ready", "250-SIZE 33554432", "LIMITS RCPTMAX=2",
		"250-AUTH PLAIN X-TEST", "250-DELIVERBY 90", "MT-PRIORITY MIXER", "250 2.0.0 Roger, accepting mail from <x@a>",
		"250 2.0.0 I'll make sure <y@b> gets this", "452 4.5.3 Maximum limit of 2 recipients reached", "250 2.0.0 Hello b.test"} {
		if !strings.Contains(got, want) {
			t.Errorf("transcripts lack %q", want)
		}
	}
}

// BenchmarkPatchWriteResponse: v0.25.1's writeResponse (fmt, a flush per
// line) against the patched one, for a one-line reply and a 9-line EHLO
// reply, into a discarding connection.
func BenchmarkPatchWriteResponse(b *testing.B) {
	ehlo := []string{"Hello source.test", "PIPELINING", "8BITMIME", "ENHANCEDSTATUSCODES", "CHUNKING", "SIZE 33554432", "LIMITS RCPTMAX=1000"}
	for _, bc := range []struct {
		name  string
		code  int
		enh   EnhancedCode
		lines []string
	}{
		{"one-line", 250, EnhancedCode{2, 0, 0}, []string{"I'll make sure <rcpt@sink.test> gets this"}},
		{"ehlo", 250, NoEnhancedCode, ehlo},
	} {
		rwc := struct {
			io.Reader
			io.Writer
			io.Closer
		}{nil, io.Discard, nil}
		b.Run(bc.name+"/orig", func(b *testing.B) {
			text := textproto.NewConn(rwc)
			b.ReportAllocs()
			for b.Loop() {
				origWriteResponse(text, bc.code, bc.enh, bc.lines...)
			}
		})
		b.Run(bc.name+"/patched", func(b *testing.B) {
			c := &Conn{server: &Server{}, text: textproto.NewConn(rwc)}
			b.ReportAllocs()
			for b.Loop() {
				c.writeResponse(bc.code, bc.enh, bc.lines...)
			}
		})
	}
}
