package demo

import (
	"bytes"
	"net"
	"testing"

	"github.com/mailbench/mailbench/internal/gosmtp"
)

// submitSized sends msg to rcpt with MAIL's SIZE= set to size (0: none).
func submitSized(t testing.TB, c *smtp.Client, rcpt string, msg []byte, size int64) {
	t.Helper()
	var opts *smtp.MailOptions
	if size != 0 {
		opts = &smtp.MailOptions{Size: size}
	}
	if err := c.Mail("sender@client.test", opts); err != nil {
		t.Fatalf("MAIL SIZE=%d: %v", size, err)
	}
	if err := c.Rcpt(rcpt, nil); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("DATA of %d bytes, SIZE=%d: %v", len(msg), size, err)
	}
}

func dialSMTP(t testing.TB, addr string) *smtp.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	c := smtp.NewClient(conn)
	c.CommandTimeout, c.SubmissionTimeout = testTimeout, testTimeout
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSMTPDataSizedFromMAIL: the message buffer is reserved from MAIL's
// SIZE=, which a client may get wrong or inflate: whatever it announces,
// the message stored is the one sent, behind the Received header.
func TestSMTPDataSizedFromMAIL(t *testing.T) {
	tg := startTarget(t, Options{OpTimeout: testTimeout})
	u := testUsers[0]
	small := testMessage("small")
	large := append(testMessage("large"), bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\r\n"), 24<<10)...) // 1.5 MiB: over presizeCap
	c := dialSMTP(t, tg.SMTPAddr())
	cases := []struct {
		name string
		msg  []byte
		size int64
	}{
		{"no SIZE", small, 0},
		{"exact", small, int64(len(small))},
		{"too small", small, 10},
		{"too large", small, int64(len(small)) * 4},
		{"huge", small, 60 << 20}, // reserved up to presizeCap only
		{"large, exact", large, int64(len(large))},
		{"large, no SIZE", large, 0},
		{"large, too small", large, 100},
	}
	for _, tc := range cases {
		submitSized(t, c, address(u), tc.msg, tc.size)
	}
	got := inbox(t, tg, u)
	if len(got) != len(cases) {
		t.Fatalf("%d messages in INBOX, want %d", len(got), len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkDelivered(t, got[i], tc.msg) })
	}
}

// BenchmarkSMTPDataLocal: one connection submits 8 KiB messages with
// SIZE= to a local user of the target (client and target in one process).
func BenchmarkSMTPDataLocal(b *testing.B) {
	tg := startTarget(b, Options{OpTimeout: testTimeout})
	msg := append(testMessage("bench"), bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\r\n"), 126)...)
	c := dialSMTP(b, tg.SMTPAddr())
	rcpt := address(testUsers[0])
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		submitSized(b, c, rcpt, msg, int64(len(msg)))
	}
}

// TestDataBufferReservesAtMostTheCap: an announced size is reserved up to
// presizeCap, so that connections announcing 60 MiB each reserve 1 MiB
// each until they send.
func TestDataBufferReservesAtMostTheCap(t *testing.T) {
	hdr := []byte("Received: x\r\n")
	for _, tc := range []struct {
		size    int64
		wantCap int
	}{
		{0, len(hdr) + bytes.MinRead},
		{-5, len(hdr) + bytes.MinRead},
		{8192, len(hdr) + 8192 + bytes.MinRead},
		{presizeCap, len(hdr) + presizeCap + bytes.MinRead},
		{60 << 20, len(hdr) + presizeCap + bytes.MinRead},
	} {
		buf := dataBuffer(hdr, tc.size)
		if got := buf.Cap(); got != tc.wantCap {
			t.Errorf("dataBuffer(size %d).Cap() = %d, want %d", tc.size, got, tc.wantCap)
		}
		if !bytes.Equal(buf.Bytes(), hdr) {
			t.Errorf("dataBuffer(size %d) holds %q, want the header", tc.size, buf.Bytes())
		}
	}
}
