package demo

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/gosmtp"
)

func TestCorruptBody(t *testing.T) {
	tests := []struct {
		name   string
		msg    string
		wantOK bool
		want   string
	}{
		{"letter in the middle changes case", "A: b\r\n\r\nabcde", true, "A: b\r\n\r\nabCde"},
		{"digit becomes next digit", "A: b\r\n\r\n--9--", true, "A: b\r\n\r\n--0--"},
		{"skips CRLF to the next letter", "A: b\r\n\r\n\r\n\r\nx", true, "A: b\r\n\r\n\r\n\r\nX"},
		{"punctuation only", "A: b\r\n\r\n!!!", true, "A: b\r\n\r\n! !"},
		{"empty body", "A: b\r\n\r\n", false, ""},
		{"only line breaks", "A: b\r\n\r\n\r\n\r\n", false, ""},
		{"no separator", "A: b\r\n", false, ""},
		{"header letters are never touched", "Subject: hello\r\n\r\n..", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := []byte(tt.msg)
			got, ok := corruptBody(orig)
			if ok != tt.wantOK || (ok && string(got) != tt.want) {
				t.Errorf("corruptBody(%q) = %q, %v; want %q, %v", tt.msg, got, ok, tt.want, tt.wantOK)
			}
			if string(orig) != tt.msg {
				t.Errorf("corruptBody modified its input to %q", orig)
			}
		})
	}
}

func FuzzCorruptBody(f *testing.F) {
	for _, s := range []string{"A: b\r\n\r\nbody", "\r\n\r\n", "x\r\n\r\n\r\n.\r\n", "A: b\r\n\r\n\xff\xfe", "no body"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		orig := bytes.Clone(msg)
		got, ok := corruptBody(msg)
		if !bytes.Equal(msg, orig) {
			t.Fatal("input modified")
		}
		if !ok {
			return
		}
		if len(got) != len(msg) {
			t.Fatalf("length %d, want %d", len(got), len(msg))
		}
		start := bytes.Index(msg, []byte("\r\n\r\n")) + 4
		diff := 0
		for i := range msg {
			if got[i] == msg[i] {
				continue
			}
			diff++
			if i < start {
				t.Fatalf("header byte %d changed", i)
			}
			for _, b := range []byte{msg[i], got[i]} {
				if b == '\r' || b == '\n' {
					t.Fatalf("line break changed at %d: %q -> %q", i, msg[i], got[i])
				}
			}
		}
		if diff != 1 {
			t.Fatalf("%d bytes changed, want 1", diff)
		}
	})
}

// FuzzSMTPSession drives the SMTP session with arbitrary recipients and
// message bytes, as a hostile client could: it must never panic, must
// answer unknown local users 550 5.1.1, count rejections, and deliver to
// user1's INBOX exactly when user1 is the recipient.
func FuzzSMTPSession(f *testing.F) {
	f.Add("user1@example.test", "", []byte("Subject: x\r\n\r\nbody\r\n"))
	f.Add("USER1@Example.Test", "sender@x", []byte(""))
	f.Add("nobody@example.test", "<>", []byte("\r\n\r\n"))
	f.Add("bob@remote.test", "a@b", []byte("no header"))
	f.Add("@example.test", "", []byte{0, 0xff, '\n'})
	f.Add("user1@example.test@remote.test", "", []byte("x"))

	tg, err := Start(context.Background(), Options{Users: testUsers, RelayAddr: "127.0.0.1:1", RelayWorkers: 1, RelayQueueSize: 4,
		RelayAttempts: 1, OpTimeout: 100 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { tg.Close() })
	user1 := tg.byLogin["user1"]

	f.Fuzz(func(t *testing.T, rcpt, from string, msg []byte) {
		s := &smtpSession{t: tg}
		if err := s.Mail(from, nil); err != nil {
			t.Fatalf("Mail() = %v", err)
		}
		before := tg.Stats()
		err := s.Rcpt(rcpt, nil)
		local, domain, hasAt := splitAddress(rcpt)
		isLocal := hasAt && local != "" && strings.EqualFold(domain, DefaultLocalDomain)
		var se *smtp.SMTPError
		switch {
		case err == nil:
		case errors.As(err, &se) && se.Code >= 500:
			if isLocal && tg.byAddress[strings.ToLower(rcpt)] == nil && se.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) {
				t.Fatalf("unknown local %q answered %v", rcpt, err)
			}
			if tg.Stats().Rejected != before.Rejected+1 {
				t.Fatal("rejection not counted")
			}
			return
		default:
			t.Fatalf("Rcpt(%q) = %v", rcpt, err)
		}
		st, _ := user1.mem.Status("INBOX", &imap.StatusOptions{NumMessages: true})
		if err := s.Data(bytes.NewReader(msg)); err != nil {
			var se *smtp.SMTPError
			if errors.As(err, &se) && se.Code == 451 {
				return // relay queue full
			}
			t.Fatalf("Data() = %v", err)
		}
		after, _ := user1.mem.Status("INBOX", &imap.StatusOptions{NumMessages: true})
		toUser1 := strings.EqualFold(rcpt, "user1@example.test")
		if got := *after.NumMessages - *st.NumMessages; (got == 1) != toUser1 {
			t.Fatalf("INBOX grew by %d for rcpt %q", got, rcpt)
		}
	})
}
