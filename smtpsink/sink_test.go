package smtpsink

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/gosmtp"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr bool
	}{
		{"defaults", Options{}, false},
		{"negative read timeout", Options{ReadTimeout: -time.Second}, true},
		{"negative write timeout", Options{WriteTimeout: -time.Second}, true},
		{"implicit TLS without config", Options{ImplicitTLS: true}, true},
		{"negative delay", Options{Faults: Faults{Delay: -1}}, true},
		{"negative reject", Options{Faults: Faults{RejectEvery: -1}}, true},
		{"unlimited", Options{MaxMessageBytes: -1, MaxRecipients: -1, MaxConnections: -1, MaxLineLength: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.opts)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && s.Addr() != nil {
				t.Errorf("Addr before Start = %v, want nil", s.Addr())
			}
		})
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := s.opts
	if o.Domain != DefaultDomain || o.MaxMessageBytes != DefaultMaxMessageBytes ||
		o.MaxRecipients != DefaultMaxRecipients || o.MaxLineLength != DefaultMaxLineLength ||
		o.ReadTimeout != DefaultTimeout || o.WriteTimeout != DefaultTimeout ||
		o.MaxConnections != DefaultMaxConnections {
		t.Errorf("defaults not applied: %+v", o)
	}
}

func TestAcceptsAndCounts(t *testing.T) {
	tests := []struct {
		name string
		from string
		to   []string
		body string
	}{
		{"one recipient", "a@example.test", []string{"x@remote.test"}, "Hello\r\n"},
		{"three recipients", "b@example.test", []string{"x@remote.test", "y@remote.test", "z@remote.test"}, "Hi\r\nthere\r\n"},
		{"null sender", "", []string{"x@remote.test"}, "bounce\r\n"},
		{"dot stuffed lines", "c@example.test", []string{"x@remote.test"}, ".leading dot\r\n..two dots\r\n.\r\nend\r\n"},
		{"empty body", "d@example.test", []string{"x@remote.test"}, ""},
	}
	var got arrivals
	s := startSink(t, Options{OnMessage: got.hook})
	c := dialClient(t, s)
	var wantRcpts, wantBytes int64
	for i, tt := range tests {
		msg := testMessage(fmt.Sprintf("id-%d", i), time.Time{}, tt.body)
		if code, step, err := send(c, tt.from, tt.to, msg); err != nil {
			t.Fatalf("%s: %s failed with %d: %v", tt.name, step, code, err)
		}
		wantRcpts += int64(len(tt.to))
		wantBytes += int64(len(msg))
		waitMessages(t, s, int64(i+1))
		all := got.wait(i + 1)
		if len(all) != i+1 {
			t.Fatalf("%s: %d arrivals after the 250, want %d", tt.name, len(all), i+1)
		}
		a := all[i]
		if a.ID != fmt.Sprintf("id-%d", i) || a.From != tt.from || !slices.Equal(a.Recipients, tt.to) ||
			a.Bytes != int64(len(msg)) {
			t.Errorf("%s: arrival %+v", tt.name, a)
		}
		if want := msgsum.BodySum([]byte(tt.body)); a.Sum != want || a.BodySum != want {
			t.Errorf("%s: Sum %q BodySum %q, want %q", tt.name, a.Sum, a.BodySum, want)
		}
		if !a.Sent.IsZero() {
			t.Errorf("%s: Sent = %v without header", tt.name, a.Sent)
		}
	}
	waitMessages(t, s, int64(len(tests)))
	got2 := s.Counts()
	want := Counts{Connections: 1, Messages: int64(len(tests)), Recipients: wantRcpts, Bytes: wantBytes, Active: 1}
	if got2 != want {
		t.Errorf("Counts = %+v, want %+v", got2, want)
	}
	if n := s.RelayDelay().TotalCount(); n != 0 {
		t.Errorf("relay delays recorded without Sent headers: %d", n)
	}
}

func TestBodySumDetectsCorruption(t *testing.T) {
	var got arrivals
	s := startSink(t, Options{OnMessage: got.hook})
	c := dialClient(t, s)
	msg := testMessage("x", time.Time{}, "original\r\n")
	msg = bytes.Replace(msg, []byte("original"), []byte("tampered"), 1)
	if code, step, err := send(c, "a@example.test", []string{"b@remote.test"}, msg); err != nil {
		t.Fatalf("%s: %d %v", step, code, err)
	}
	waitMessages(t, s, 1)
	a := got.wait(1)[0]
	if a.Sum == a.BodySum || a.BodySum != msgsum.BodySum([]byte("tampered\r\n")) {
		t.Errorf("Sum %q BodySum %q: corruption not visible", a.Sum, a.BodySum)
	}
}

func TestRelayDelay(t *testing.T) {
	sent := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name      string
		header    string // X-Mailbench-Sent value; "" omits the header
		received  time.Time
		wantSent  time.Time
		wantDelay time.Duration // -1: nothing recorded
	}{
		{"measured", sent.Format(time.RFC3339Nano), sent.Add(1500 * time.Millisecond), sent, 1500 * time.Millisecond},
		{"other zone", sent.In(time.FixedZone("x", 3600)).Format(time.RFC3339Nano), sent.Add(2 * time.Second), sent, 2 * time.Second},
		{"clock skew clamps to zero", sent.Format(time.RFC3339Nano), sent.Add(-time.Second), sent, 0},
		{"beyond max clamps", sent.Format(time.RFC3339Nano), sent.Add(3 * time.Hour), sent, RelayDelayMax},
		{"absent", "", sent, time.Time{}, -1},
		{"garbage", "yesterday", sent, time.Time{}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got arrivals
			s := startSink(t, Options{OnMessage: got.hook, Now: func() time.Time { return tt.received }})
			c := dialClient(t, s)
			msg := testMessage("id", time.Time{}, "body\r\n")
			if tt.header != "" {
				msg = append([]byte(HeaderSent+": "+tt.header+"\r\n"), msg...)
			}
			if code, step, err := send(c, "a@example.test", []string{"b@remote.test"}, msg); err != nil {
				t.Fatalf("%s: %d %v", step, code, err)
			}
			waitMessages(t, s, 1)
			a := got.wait(1)[0]
			if !a.Sent.Equal(tt.wantSent) || !a.Received.Equal(tt.received) {
				t.Errorf("Sent %v Received %v, want %v %v", a.Sent, a.Received, tt.wantSent, tt.received)
			}
			h := s.RelayDelay()
			if tt.wantDelay < 0 {
				if h.TotalCount() != 0 {
					t.Fatalf("recorded %d delays", h.TotalCount())
				}
				return
			}
			if h.TotalCount() != 1 {
				t.Fatalf("recorded %d delays, want 1", h.TotalCount())
			}
			want := tt.wantDelay.Microseconds()
			if v := h.ValueAtQuantile(50); !h.ValuesAreEquivalent(v, want) {
				t.Errorf("recorded %dµs, want %dµs", v, want)
			}
		})
	}
}

func TestRelayDelayIsACopy(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.recordRelayDelay(time.Millisecond)
	h := s.RelayDelay()
	h.RecordValue(5)
	if n := s.RelayDelay().TotalCount(); n != 1 {
		t.Errorf("sink histogram has %d values after writing to the copy, want 1", n)
	}
}

func TestLimits(t *testing.T) {
	long := strings.Repeat("x", 2100)
	tests := []struct {
		name     string
		opts     Options
		to       int
		msg      []byte
		wantCode int
		wantStep string
		errors   int64 // Counts.Errors afterwards
	}{
		{"message too big", Options{MaxMessageBytes: 1000}, 1, testMessage("big", time.Time{}, strings.Repeat("0123456789\r\n", 200)), 552, "dot", 1},
		{"too many recipients", Options{MaxRecipients: 2}, 3, testMessage("r", time.Time{}, "x\r\n"), 452, "RCPT", 0},
		{"long line in body", Options{}, 1, testMessage("l", time.Time{}, long+"\r\n"), 554, "dot", 1},
		{"long line within a raised limit", Options{MaxLineLength: 4000}, 1, testMessage("l", time.Time{}, long+"\r\n"), 0, "", 0},
		{"long header line", Options{}, 1, append([]byte("X-Long: "+long+"\r\n"), testMessage("h", time.Time{}, "x\r\n")...), 554, "dot", 1},
		{"malformed header", Options{}, 1, []byte("this is not a header\r\n\r\nbody\r\n"), 554, "dot", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSink(t, tt.opts)
			c := dialClient(t, s)
			to := make([]string, tt.to)
			for i := range to {
				to[i] = fmt.Sprintf("u%d@remote.test", i)
			}
			code, step, err := send(c, "a@example.test", to, tt.msg)
			if code != tt.wantCode || step != tt.wantStep {
				t.Fatalf("got %d at %q (%v), want %d at %q", code, step, err, tt.wantCode, tt.wantStep)
			}
			wantMsgs := int64(0)
			if tt.wantCode == 0 {
				wantMsgs = 1
			}
			waitMessages(t, s, wantMsgs)
			if got := s.Counts(); got.Messages != wantMsgs || got.Errors != tt.errors {
				t.Errorf("Counts = %+v, want %d messages, %d errors", got, wantMsgs, tt.errors)
			}
			// The sink keeps serving new connections.
			c2 := dialClient(t, s)
			if err := c2.Noop(); err != nil {
				t.Fatalf("NOOP after %s: %v", tt.name, err)
			}
		})
	}
}

func TestLongCommandLineClosesConnection(t *testing.T) {
	s := startSink(t, Options{})
	r := dialRaw(t, s.Addr().String())
	if code, _ := r.reply(); code != 220 {
		t.Fatalf("banner %d", code)
	}
	r.write("EHLO " + strings.Repeat("a", 3000) + "\r\n")
	if code, msg := r.reply(); code != 500 {
		t.Fatalf("reply %d %q, want 500", code, msg)
	}
	if code, _ := r.reply(); code != -1 {
		t.Fatalf("connection still open (reply %d)", code)
	}
}

// TestRawDialogues covers input that go-smtp's client doesn't produce.
func TestRawDialogues(t *testing.T) {
	body := "chunked\r\nbody\r\n"
	bdatMsg := string(testMessage("bdat", time.Time{}, body))
	tests := []struct {
		name      string
		steps     []string // each written, then one reply read
		wantCodes []int
		wantMsgs  int64
		wantSum   string // BodySum of the accepted message
	}{
		{"BDAT in two chunks",
			[]string{"EHLO c\r\n", "MAIL FROM:<a@x>\r\n", "RCPT TO:<b@y>\r\n",
				fmt.Sprintf("BDAT 10\r\n%s", bdatMsg[:10]), fmt.Sprintf("BDAT %d LAST\r\n%s", len(bdatMsg)-10, bdatMsg[10:])},
			[]int{250, 250, 250, 250, 250}, 1, msgsum.BodySum([]byte(body))},
		{"header only, no trailing CRLF, via BDAT",
			[]string{"EHLO c\r\n", "MAIL FROM:<a@x>\r\n", "RCPT TO:<b@y>\r\n", "BDAT 10 LAST\r\nSubject: x"},
			[]int{250, 250, 250, 250}, 1, msgsum.BodySum(nil)},
		{"DATA before RCPT", []string{"EHLO c\r\n", "DATA\r\n"}, []int{250, 502}, 0, ""},
		{"garbage command", []string{"\x00\xff\r\n", "EHLO c\r\n"}, []int{501, 250}, 0, ""},
		{"STARTTLS without TLS", []string{"EHLO c\r\n", "STARTTLS\r\n"}, []int{250, 502}, 0, ""},
		{"continuation first header line",
			[]string{"EHLO c\r\n", "MAIL FROM:<a@x>\r\n", "RCPT TO:<b@y>\r\n", "DATA\r\n", " folded\r\n\r\nx\r\n.\r\n", "NOOP\r\n"},
			[]int{250, 250, 250, 354, 554, 250}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got arrivals
			s := startSink(t, Options{OnMessage: got.hook})
			r := dialRaw(t, s.Addr().String())
			if code, _ := r.reply(); code != 220 {
				t.Fatalf("banner %d", code)
			}
			for i, step := range tt.steps {
				r.write(step)
				if code, msg := r.reply(); code != tt.wantCodes[i] {
					t.Fatalf("step %d %q: reply %d %q, want %d", i, step, code, msg, tt.wantCodes[i])
				}
			}
			waitMessages(t, s, int64(tt.wantMsgs))
			if n := s.Counts().Messages; n != int64(tt.wantMsgs) {
				t.Fatalf("Messages = %d, want %d", n, tt.wantMsgs)
			}
			if tt.wantMsgs > 0 {
				if a := got.wait(int(tt.wantMsgs))[0]; a.BodySum != tt.wantSum {
					t.Errorf("BodySum %q, want %q", a.BodySum, tt.wantSum)
				}
			}
		})
	}
}

func TestRejectEvery(t *testing.T) {
	tests := []struct {
		name      string
		faults    Faults
		wantCodes []int
	}{
		{"never", Faults{}, []int{0, 0, 0, 0}},
		{"every 3rd temporary", Faults{RejectEvery: 3}, []int{0, 0, 451, 0, 0, 451}},
		{"every 2nd permanent", Faults{RejectEvery: 2, RejectPermanent: true}, []int{0, 554, 0, 554}},
		{"every message", Faults{RejectEvery: 1}, []int{451, 451}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got arrivals
			s := startSink(t, Options{Faults: tt.faults, OnMessage: got.hook})
			c := dialClient(t, s)
			var accepted, rejected int64
			for i, want := range tt.wantCodes {
				code, _, err := send(c, "a@example.test", []string{"b@remote.test"}, testMessage(fmt.Sprint(i), time.Time{}, "x\r\n"))
				if code != want {
					t.Fatalf("message %d: code %d (%v), want %d", i+1, code, err, want)
				}
				if code == 0 {
					accepted++
				} else {
					rejected++
				}
			}
			waitMessages(t, s, accepted)
			cnt := s.Counts()
			if cnt.Messages != accepted || cnt.Rejected != rejected || cnt.Errors != 0 || int64(len(got.wait(int(accepted)))) != accepted {
				t.Errorf("Counts = %+v, arrivals %d; want %d accepted, %d rejected", cnt, len(got.wait(int(accepted))), accepted, rejected)
			}
		})
	}
}

func TestDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	s := startSink(t, Options{Faults: Faults{Delay: delay}})
	c := dialClient(t, s)
	start := time.Now()
	if code, step, err := send(c, "a@example.test", []string{"b@remote.test"}, testMessage("d", time.Time{}, "x\r\n")); err != nil {
		t.Fatalf("%s: %d %v", step, code, err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("transaction took %v, want at least %v", took, delay)
	}
}

func TestCloseAbortsDelay(t *testing.T) {
	read := make(chan struct{})
	s := startSink(t, Options{Faults: Faults{Delay: time.Minute}, Now: func() time.Time {
		close(read) // called once, when the final dot has been read
		return time.Now()
	}})
	c := dialClient(t, s)
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, _, err := send(c, "a@example.test", []string{"b@remote.test"}, testMessage("d", time.Time{}, "x\r\n"))
		done <- result{code, err}
	}()
	select {
	case <-read:
	case <-time.After(ioTimeout):
		t.Fatal("message not read")
	}
	s.Close()
	select {
	case r := <-done:
		if r.err == nil {
			t.Fatalf("message accepted although the sink closed")
		}
	case <-time.After(ioTimeout):
		t.Fatal("client still waiting after Close")
	}
	if n := s.Counts().Messages; n != 0 {
		t.Errorf("Messages = %d, want 0", n)
	}
}

func TestConnectionLimit(t *testing.T) {
	s := startSink(t, Options{MaxConnections: 2})
	c1 := dialClient(t, s)
	dialClient(t, s)

	r := dialRaw(t, s.Addr().String())
	if code, msg := r.reply(); code != 421 {
		t.Fatalf("third connection got %d %q, want 421", code, msg)
	}
	if code, _ := r.reply(); code != -1 {
		t.Fatalf("refused connection still open")
	}
	if got := s.Counts(); got.Refused != 1 || got.Connections != 2 || got.Active != 2 {
		t.Fatalf("Counts = %+v", got)
	}

	if err := c1.Quit(); err != nil {
		t.Fatalf("QUIT: %v", err)
	}
	eventually(t, "the connection to be released", func() bool { return s.Counts().Active == 1 })
	c3 := dialClient(t, s)
	if code, step, err := send(c3, "a@example.test", []string{"b@remote.test"}, testMessage("c", time.Time{}, "x\r\n")); err != nil {
		t.Fatalf("%s: %d %v", step, code, err)
	}
}

func TestConnectionLimitImplicitTLS(t *testing.T) {
	cfg, pool := selfSigned(t)
	s := startSink(t, Options{MaxConnections: 1, TLSConfig: cfg, ImplicitTLS: true})
	clientCfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	first, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", s.Addr().String(), clientCfg)
	if err != nil {
		t.Fatalf("first TLS dial: %v", err)
	}
	defer first.Close()
	first.SetDeadline(time.Now().Add(ioTimeout))
	c1 := smtp.NewClient(first)
	if err := c1.Hello("c"); err != nil {
		t.Fatalf("EHLO: %v", err)
	}
	second, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", s.Addr().String(), clientCfg)
	if err != nil {
		t.Fatalf("second TLS dial: %v", err)
	}
	r := newRawConn(t, second)
	if code, msg := r.reply(); code != 421 {
		t.Fatalf("refused TLS connection got %d %q, want 421", code, msg)
	}
}

func TestTLS(t *testing.T) {
	cfg, pool := selfSigned(t)
	clientCfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	tests := []struct {
		name     string
		implicit bool
	}{{"STARTTLS", false}, {"implicit", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSink(t, Options{TLSConfig: cfg, ImplicitTLS: tt.implicit})
			conn, err := net.DialTimeout("tcp", s.Addr().String(), ioTimeout)
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(ioTimeout))
			var c *smtp.Client
			if tt.implicit {
				c = smtp.NewClient(tls.Client(conn, clientCfg))
			} else if c, err = smtp.NewClientStartTLS(conn, clientCfg); err != nil {
				t.Fatalf("STARTTLS: %v", err)
			}
			defer c.Close()
			if err := c.Hello("c"); err != nil {
				t.Fatalf("EHLO: %v", err)
			}
			if _, ok := c.TLSConnectionState(); !ok {
				t.Fatal("connection is not TLS")
			}
			if ok, _ := c.Extension("STARTTLS"); ok {
				t.Error("STARTTLS offered inside TLS")
			}
			if code, step, err := send(c, "a@example.test", []string{"b@remote.test"}, testMessage("t", time.Time{}, "x\r\n")); err != nil {
				t.Fatalf("%s: %d %v", step, code, err)
			}
			waitMessages(t, s, 1)
			if n := s.Counts().Messages; n != 1 {
				t.Errorf("Messages = %d", n)
			}
		})
	}
}

func TestSaveDir(t *testing.T) {
	tests := []struct {
		name      string
		faults    Faults
		sent      int
		wantFiles []int // indexes of the messages that must be saved, as 1.eml, 2.eml, ...
	}{
		{"all saved", Faults{}, 3, []int{0, 1, 2}},
		{"rejected not saved", Faults{RejectEvery: 2}, 4, []int{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mail")
			s := startSink(t, Options{SaveDir: dir, Faults: tt.faults})
			c := dialClient(t, s)
			var msgs [][]byte
			for i := range tt.sent {
				msg := testMessage(fmt.Sprint(i), time.Time{}, fmt.Sprintf("message %d\r\n.dot\r\n", i))
				msgs = append(msgs, msg)
				send(c, "a@example.test", []string{"b@remote.test"}, msg)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			var want []string
			for n := range tt.wantFiles {
				want = append(want, fmt.Sprintf("%d.eml", n+1))
			}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Fatalf("files %v, want %v", names, want)
			}
			for n, idx := range tt.wantFiles {
				b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.eml", n+1)))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, msgs[idx]) {
					t.Errorf("%d.eml = %q, want %q", n+1, b, msgs[idx])
				}
			}
		})
	}
}

func TestSaveDirFailedTransferLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	s := startSink(t, Options{SaveDir: dir, MaxMessageBytes: 500})
	c := dialClient(t, s)
	if code, _, _ := send(c, "a@x", []string{"b@y"}, testMessage("big", time.Time{}, strings.Repeat("y", 70)+strings.Repeat("\r\nzzzz", 200)+"\r\n")); code != 552 {
		t.Fatalf("code %d, want 552", code)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

func TestShutdown(t *testing.T) {
	t.Run("waits for idle clients until ctx ends, then closes", func(t *testing.T) {
		s := startSink(t, Options{})
		c := dialClient(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want deadline exceeded", err)
		}
		if err := c.Noop(); err == nil {
			t.Fatal("connection still served after Shutdown")
		}
		if err := s.Wait(); err != nil {
			t.Fatalf("Wait = %v", err)
		}
		eventually(t, "no active connections", func() bool { return s.Counts().Active == 0 })
	})
	t.Run("returns when clients quit", func(t *testing.T) {
		s := startSink(t, Options{})
		c := dialClient(t, s)
		done := make(chan error, 1)
		go func() { done <- s.Shutdown(context.Background()) }()
		if err := c.Quit(); err != nil {
			t.Fatalf("QUIT: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Shutdown = %v", err)
			}
		case <-time.After(ioTimeout):
			t.Fatal("Shutdown did not return after the client quit")
		}
	})
	t.Run("Serve after Close", func(t *testing.T) {
		s, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Serve(ln); !errors.Is(err, ErrClosed) {
			t.Fatalf("Serve = %v, want ErrClosed", err)
		}
		if _, err := ln.Accept(); err == nil {
			t.Fatal("listener left open")
		}
	})
}

func TestServeOwnListener(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	eventually(t, "Addr", func() bool { return s.Addr() != nil })
	if s.Addr().String() != ln.Addr().String() {
		t.Fatalf("Addr %v, want %v", s.Addr(), ln.Addr())
	}
	c := dialClient(t, s)
	if err := c.Noop(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v after Close, want nil", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Serve did not return after Close")
	}
}

// TestForeignMail: with Belongs, mail of other runs (an earlier run's,
// retried by the server) and mail without a mailbench id is accepted but
// counted apart: it enters no count, no relay delay and no OnMessage.
func TestForeignMail(t *testing.T) {
	var got arrivals
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := startSink(t, Options{OnMessage: got.hook, Now: func() time.Time { return now },
		Belongs: func(id string) bool { return strings.HasPrefix(id, "r00000001-") }})
	c := dialClient(t, s)
	sent := now.Add(-time.Second)
	for _, id := range []string{"r00000001-000000000001", "r00000002-000000000007", "r00000002-000000000008", ""} {
		msg := testMessage(id, sent.Add(-time.Hour), "body\r\n") // foreign mail carries an old stamp
		if id == "r00000001-000000000001" {
			msg = testMessage(id, sent, "body\r\n")
		}
		if code, step, err := send(c, "a@example.test", []string{"b@remote.test"}, msg); err != nil {
			t.Fatalf("%s: %s: %d %v", id, step, code, err)
		}
	}
	waitMessages(t, s, 1)
	n := s.Counts()
	if n.Messages != 1 || n.Recipients != 1 || n.Foreign != 3 {
		t.Errorf("counts %+v, want 1 message of this run and 3 foreign", n)
	}
	if h := s.RelayDelay(); h.TotalCount() != 1 || !h.ValuesAreEquivalent(h.Max(), time.Second.Microseconds()) {
		t.Errorf("relay delays: %d recorded, max %dµs; want this run's one, 1 s", h.TotalCount(), h.Max())
	}
	if a := got.wait(1); len(a) != 1 || a[0].ID != "r00000001-000000000001" {
		t.Errorf("OnMessage saw %+v", a)
	}
	if runs := s.ForeignRuns(); len(runs) != 2 || runs["r00000002"] != 2 || runs[""] != 1 {
		t.Errorf("foreign runs %v", runs)
	}
}
