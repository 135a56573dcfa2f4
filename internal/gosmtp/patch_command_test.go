package smtp

// Test of mailbench's command-size.patch: MAIL and RCPT reserve room for
// their address instead of 2 KiB each, and still write exactly the
// commands go-smtp v0.25.1 writes, with every parameter and with addresses
// and parameters longer than the room reserved.

import (
	"runtime"
	"strings"
	"testing"
)

func TestPatchCommandSizeSameCommands(t *testing.T) {
	long := strings.Repeat("l", 300) + "@example.test"
	auth := "<>"
	size := int64(123456789)
	tests := []struct {
		name  string
		ext   string // the EHLO reply's extension lines
		from  string
		mail  *MailOptions
		to    string
		rcpt  *RcptOptions
		wantM string
		wantR string
	}{
		{"plain", "250 HELP\r\n", "a@x.test", nil, "b@y.test", nil,
			"MAIL FROM:<a@x.test>", "RCPT TO:<b@y.test>"},
		{"null sender", "250 HELP\r\n", "", nil, "b@y.test", nil,
			"MAIL FROM:<>", "RCPT TO:<b@y.test>"},
		{"size and 8bitmime", "250-8BITMIME\r\n250 SIZE 0\r\n", "a@x.test", &MailOptions{Size: size}, "b@y.test", &RcptOptions{},
			"MAIL FROM:<a@x.test> BODY=8BITMIME SIZE=123456789", "RCPT TO:<b@y.test>"},
		{"long addresses", "250-8BITMIME\r\n250 SIZE 0\r\n", long, &MailOptions{Size: size}, long, nil,
			"MAIL FROM:<" + long + "> BODY=8BITMIME SIZE=123456789", "RCPT TO:<" + long + ">"},
		{"every parameter", "250-8BITMIME\r\n250-SIZE\r\n250-REQUIRETLS\r\n250-SMTPUTF8\r\n250-DSN\r\n250 AUTH PLAIN\r\n",
			"a@x.test", &MailOptions{Size: 42, RequireTLS: true, UTF8: true, Return: DSNReturnHeaders, EnvelopeID: "id+1=2", Auth: &auth},
			"b@y.test", &RcptOptions{Notify: []DSNNotify{DSNNotifySuccess, DSNNotifyFailure}, OriginalRecipientType: DSNAddressTypeRFC822, OriginalRecipient: "o@z.test"},
			"MAIL FROM:<a@x.test> BODY=8BITMIME SIZE=42 REQUIRETLS SMTPUTF8 RET=HDRS ENVID=id+2B1+3D2 AUTH=<>",
			"RCPT TO:<b@y.test> NOTIFY=SUCCESS,FAILURE ORCPT=RFC822;o@z.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := &scriptConn{replies: strings.NewReader("220 hi\r\n250-x\r\n" + tt.ext + "250 ok\r\n250 ok\r\n")}
			c := NewClient(conn)
			if err := c.Hello("client.test"); err != nil {
				t.Fatal(err)
			}
			if err := c.Mail(tt.from, tt.mail); err != nil {
				t.Fatal(err)
			}
			if err := c.Rcpt(tt.to, tt.rcpt); err != nil {
				t.Fatal(err)
			}
			if len(conn.writes) != 3 {
				t.Fatalf("%d writes, want EHLO, MAIL, RCPT: %q", len(conn.writes), conn.writes)
			}
			if got := string(conn.writes[1]); got != tt.wantM+"\r\n" {
				t.Errorf("MAIL wrote %q, want %q", got, tt.wantM+"\r\n")
			}
			if got := string(conn.writes[2]); got != tt.wantR+"\r\n" {
				t.Errorf("RCPT wrote %q, want %q", got, tt.wantR+"\r\n")
			}
		})
	}
}

// endlessReplies answers the first read with a greeting, every other with
// one "250 ok", and discards writes.
type endlessReplies struct {
	scriptConn
	greeted bool
}

func (c *endlessReplies) Read(p []byte) (int, error) {
	if !c.greeted {
		c.greeted = true
		return copy(p, "220 hi\r\n"), nil
	}
	return copy(p, "250 ok\r\n"), nil
}

func (*endlessReplies) Write(p []byte) (int, error) { return len(p), nil }

// TestPatchCommandSizeAllocates checks the point of the patch: a MAIL and a
// RCPT with short addresses allocate well under upstream's 2 × 2 KiB.
func TestPatchCommandSizeAllocates(t *testing.T) {
	c := NewClient(&endlessReplies{})
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	const rounds = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range rounds {
		if err := c.Mail("sender@source.test", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Rcpt("rcpt@sink.test", nil); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per > 1024 {
		t.Errorf("MAIL and RCPT allocated %d bytes per pair, want ≤ 1024 (upstream: over 4096)", per)
	}
}
