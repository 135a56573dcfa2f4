package message

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
)

// defaultSizes are the buckets of the enterprise profile.
var defaultSizes = []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20}

var testSent = time.Date(2026, 11, 30, 7, 30, 0, 123456789, time.FixedZone("CET", 3600))

func envelope(nRcpt int) Envelope {
	to := make([]string, nRcpt)
	for i := range to {
		to[i] = fmt.Sprintf("user%d@example.test", 100+i)
	}
	return Envelope{
		ID:      "r1a2b3c4d-000000000042",
		From:    "user7@example.test",
		To:      to,
		Subject: "Quarterly report draft, please review",
		Sent:    testSent,
	}
}

func newGen(t testing.TB, seed int64, sizes []int) *Generator {
	t.Helper()
	g, err := NewGenerator(seed, sizes)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var sharedGens sync.Map // seed -> *Generator over defaultSizes

// sharedGen returns a Generator over defaultSizes, built once per seed per
// test binary (building the 1 MiB bucket is the slow part under -race).
func sharedGen(t testing.TB, seed int64) *Generator {
	t.Helper()
	if g, ok := sharedGens.Load(seed); ok {
		return g.(*Generator)
	}
	g := newGen(t, seed, defaultSizes)
	sharedGens.Store(seed, g)
	return g
}

// splitMessage returns the raw header (with its blank line) and the body.
func splitMessage(t *testing.T, msg []byte) (hdr, body []byte) {
	t.Helper()
	i := bytes.Index(msg, []byte("\r\n\r\n"))
	if i < 0 {
		t.Fatal("no header/body separator")
	}
	return msg[:i+4], msg[i+4:]
}

func TestSameSeedSameBytes(t *testing.T) {
	a := sharedGen(t, 7)
	b := newGen(t, 7, defaultSizes) // built afresh: nothing shared with a
	env := envelope(2)
	for _, size := range defaultSizes {
		for v := range uint64(VariantsPerSize) {
			ma, mb := a.Message(env, size, v), b.Message(env, size, v)
			if !bytes.Equal(ma, mb) {
				t.Errorf("size %d variant %d: same seed gave different bytes", size, v)
			}
		}
	}
}

func TestDifferentSeedOrVariantDiffers(t *testing.T) {
	a := sharedGen(t, 7)
	b := sharedGen(t, 8)
	env := envelope(1)
	for _, size := range defaultSizes {
		if bytes.Equal(a.Message(env, size, 0), b.Message(env, size, 0)) {
			t.Errorf("size %d: seeds 7 and 8 gave identical messages", size)
		}
		seen := map[string]uint64{}
		for v := range uint64(VariantsPerSize) {
			_, body := splitMessage(t, a.Message(env, size, v))
			if w, dup := seen[string(body)]; dup {
				t.Errorf("size %d: variants %d and %d share a body", size, w, v)
			}
			seen[string(body)] = v
		}
		// The variant wraps around.
		if !bytes.Equal(a.Message(env, size, 1), a.Message(env, size, 1+VariantsPerSize)) {
			t.Errorf("size %d: variant 1 and %d differ", size, 1+VariantsPerSize)
		}
	}
}

func TestSizeNearTarget(t *testing.T) {
	g := sharedGen(t, 7)
	for _, nRcpt := range []int{1, 2, 3} {
		for _, size := range defaultSizes {
			for v := range uint64(VariantsPerSize) {
				n := len(g.Message(envelope(nRcpt), size, v))
				lo, hi := size-size/10, size+size/10
				if n < lo || n > hi {
					t.Errorf("%d rcpt, size %d, variant %d: %d bytes, want %d..%d", nRcpt, size, v, n, lo, hi)
				}
			}
		}
	}
}

func TestSizeWriteToAndSourceAgreeWithMessage(t *testing.T) {
	g := sharedGen(t, 7)
	for _, nRcpt := range []int{0, 1, 10} {
		env := envelope(nRcpt)
		for _, size := range defaultSizes {
			want := g.Message(env, size, 2)
			src := g.Source(env, size, 2)
			if got := src.Size(); got != int64(len(want)) {
				t.Errorf("%d rcpt, size %d: Size = %d, len(Message) = %d", nRcpt, size, got, len(want))
			}
			var buf bytes.Buffer
			n, err := src.WriteTo(&buf)
			if err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%d rcpt, size %d: WriteTo = %d, %v; bytes equal %v", nRcpt, size, n, err, bytes.Equal(buf.Bytes(), want))
			}
		}
	}
}

// A Source is rendered when it is made: sending it (Size, then WriteTo, as
// smtpclient.Client.Send does inside its timed span) renders nothing and
// allocates nothing, and the body is the pool's, not a copy.
func TestSourceRendersOnceAndSharesTheBody(t *testing.T) {
	g := sharedGen(t, 7)
	env := envelope(2)
	size := defaultSizes[len(defaultSizes)-1]
	src := g.Source(env, size, 1)
	want := g.Message(env, size, 1)
	allocs := testing.AllocsPerRun(100, func() {
		if src.Size() != int64(len(want)) {
			t.Fatalf("Size = %d, want %d", src.Size(), len(want))
		}
		if n, err := src.WriteTo(io.Discard); err != nil || n != int64(len(want)) {
			t.Fatalf("WriteTo = %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("Size and WriteTo allocate %.1f times per message, want 0 (the header rendered again?)", allocs)
	}
	if src.body != g.body(size, 1) {
		t.Error("the Source's body is a copy, not the pooled body")
	}
	// What the caller does with its envelope afterwards changes nothing:
	// the header was rendered when the Source was made.
	env.To[0] = "someone-else@example.test"
	var buf bytes.Buffer
	src.WriteTo(&buf)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Error("Source's bytes differ from Message's made before the envelope changed: the header was rendered late")
	}
}

func TestLinesCRLFAndShort(t *testing.T) {
	g := sharedGen(t, 7)
	for _, size := range defaultSizes {
		for v := range uint64(VariantsPerSize) {
			msg := g.Message(envelope(10), size, v)
			if !bytes.HasSuffix(msg, []byte("\r\n")) {
				t.Errorf("size %d variant %d: does not end in CRLF", size, v)
			}
			lines := bytes.SplitAfter(msg, []byte("\n"))
			for i, l := range lines {
				if len(l) == 0 {
					continue
				}
				if !bytes.HasSuffix(l, []byte("\r\n")) {
					t.Fatalf("size %d variant %d line %d: bare LF or no line end: %q", size, v, i, l)
				}
				if bytes.IndexByte(l[:len(l)-2], '\r') >= 0 {
					t.Fatalf("size %d variant %d line %d: bare CR", size, v, i)
				}
				if len(l)-2 > 998 {
					t.Fatalf("size %d variant %d line %d: %d chars", size, v, i, len(l)-2)
				}
			}
			_, body := splitMessage(t, msg)
			for i, l := range bytes.Split(body, []byte("\r\n")) {
				if len(l) > maxLine {
					t.Fatalf("size %d variant %d body line %d: %d chars > %d", size, v, i, len(l), maxLine)
				}
				if len(l) > 0 && l[0] == '.' {
					t.Fatalf("size %d variant %d body line %d starts with a dot", size, v, i)
				}
			}
		}
	}
}

func TestHeaderParsesAndSumMatches(t *testing.T) {
	g := sharedGen(t, 7)
	env := envelope(3)
	env.Subject = "Grüße\r\nBcc: evil@example.test"
	for _, size := range defaultSizes {
		msg := g.Message(env, size, 1)
		e, err := gomessage.Read(bytes.NewReader(msg))
		if err != nil {
			t.Fatalf("size %d: go-message Read: %v", size, err)
		}
		h := mail.Header{Header: e.Header}
		from, err := h.AddressList("From")
		if err != nil || len(from) != 1 || from[0].Address != env.From {
			t.Errorf("size %d: From = %v, %v", size, from, err)
		}
		to, err := h.AddressList("To")
		if err != nil || len(to) != len(env.To) {
			t.Fatalf("size %d: To = %v, %v", size, to, err)
		}
		for i := range to {
			if to[i].Address != env.To[i] {
				t.Errorf("size %d: To[%d] = %s, want %s", size, i, to[i].Address, env.To[i])
			}
		}
		subj, err := h.Subject()
		if err != nil || subj != "Grüße  Bcc: evil@example.test" {
			t.Errorf("size %d: Subject = %q, %v", size, subj, err)
		}
		if h.Has("Bcc") {
			t.Errorf("size %d: header injection through Subject", size)
		}
		if id, err := h.MessageID(); err != nil || id != env.ID+"@mailbench" {
			t.Errorf("size %d: Message-Id = %q, %v", size, id, err)
		}
		if d, err := h.Date(); err != nil || !d.Equal(env.Sent.Truncate(time.Second)) {
			t.Errorf("size %d: Date = %v, %v", size, d, err)
		}
		if got := h.Get("X-Mailbench-Id"); got != env.ID {
			t.Errorf("size %d: X-Mailbench-Id = %q", size, got)
		}
		sent, err := time.Parse(time.RFC3339Nano, h.Get("X-Mailbench-Sent"))
		if err != nil || !sent.Equal(env.Sent) || !strings.HasSuffix(h.Get("X-Mailbench-Sent"), "Z") {
			t.Errorf("size %d: X-Mailbench-Sent = %q (%v)", size, h.Get("X-Mailbench-Sent"), err)
		}
		_, body := splitMessage(t, msg)
		if got, want := h.Get(msgsum.Header), msgsum.BodySum(body); got != want {
			t.Errorf("size %d: %s = %q, body sums to %q", size, msgsum.Header, got, want)
		}
		mt, params, err := h.ContentType()
		if err != nil {
			t.Fatalf("size %d: Content-Type: %v", size, err)
		}
		wantMT := "text/plain"
		if size >= MultipartThreshold {
			wantMT = "multipart/mixed"
		}
		if mt != wantMT {
			t.Errorf("size %d: Content-Type %s, want %s", size, mt, wantMT)
		}
		if mt == "multipart/mixed" {
			checkMultipart(t, size, e, params["boundary"])
		} else if got, _ := io.ReadAll(e.Body); !bytes.Equal(got, body) {
			t.Errorf("size %d: 7bit text body does not read back verbatim", size)
		}
	}
}

func checkMultipart(t *testing.T, size int, e *gomessage.Entity, boundary string) {
	t.Helper()
	if boundary == "" {
		t.Fatalf("size %d: multipart without boundary", size)
	}
	mr := e.MultipartReader()
	var kinds []string
	attachment := 0
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("size %d: NextPart: %v", size, err)
		}
		mt, _, _ := p.Header.ContentType()
		kinds = append(kinds, mt)
		n, err := io.Copy(io.Discard, p.Body) // decodes base64
		if err != nil {
			t.Fatalf("size %d: reading %s part: %v", size, mt, err)
		}
		if mt == "application/octet-stream" {
			attachment = int(n)
		}
	}
	if strings.Join(kinds, ",") != "text/plain,application/octet-stream" {
		t.Errorf("size %d: parts %v", size, kinds)
	}
	if attachment < BodyTarget(size)/2 {
		t.Errorf("size %d: attachment of %d bytes is too small", size, attachment)
	}
}

func TestNewGeneratorRejectsBadSizes(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
	}{
		{"none", nil},
		{"zero", []int{0}},
		{"negative", []int{1024, -1}},
		{"huge", []int{MaxSize + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewGenerator(1, tt.sizes); err == nil {
				t.Errorf("NewGenerator(%v) succeeded", tt.sizes)
			}
		})
	}
	g := newGen(t, 1, []int{4096, 1024, 4096, 100})
	if got := fmt.Sprint(g.Sizes()); got != "[100 1024 4096]" {
		t.Errorf("Sizes() = %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Message with an unknown bucket did not panic")
		}
	}()
	g.Message(envelope(1), 2048, 0)
}

func TestToFoldedForManyRecipients(t *testing.T) {
	g := newGen(t, 1, []int{1024})
	msg := g.Message(envelope(40), 1024, 0)
	hdr, _ := splitMessage(t, msg)
	sc := bufio.NewScanner(bytes.NewReader(hdr))
	for sc.Scan() {
		if len(sc.Text()) > 78 {
			t.Errorf("header line of %d chars: %q", len(sc.Text()), sc.Text())
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	g := newGen(t, 1, []int{1024, 16 << 10})
	want := g.Message(envelope(2), 16<<10, 3)
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := true
			for range 50 {
				var buf bytes.Buffer
				src := g.Source(envelope(2), 16<<10, 3)
				src.WriteTo(&buf)
				ok = ok && bytes.Equal(buf.Bytes(), want) && src.Size() == int64(len(want))
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("concurrent render differed")
		}
	}
}

func FuzzMessageWellFormed(f *testing.F) {
	g, err := NewGenerator(1, []int{1024, 8192})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("id1", "a@b.test", "c@d.test", "hello", int64(0))
	f.Add("x\r\ny", "\n", "é\x00", "Grüße\r\n.", int64(-1))
	f.Fuzz(func(t *testing.T, id, from, to, subject string, sent int64) {
		env := Envelope{ID: id, From: from, To: []string{to, to}, Subject: subject, Sent: time.Unix(0, sent)}
		msg := g.Message(env, 1024, 0)
		hdr, body := splitMessage(t, msg)
		if bytes.Count(hdr, []byte("\r\n\r\n")) != 1 || !bytes.HasSuffix(hdr, []byte("\r\n\r\n")) {
			t.Fatalf("envelope fields broke the header: %q", hdr)
		}
		if bytes.Count(hdr, []byte("\n")) != bytes.Count(hdr, []byte("\r\n")) {
			t.Fatalf("bare LF in header: %q", hdr)
		}
		e, err := gomessage.Read(bytes.NewReader(msg))
		if err != nil {
			t.Fatalf("go-message cannot read: %v", err)
		}
		if e.Header.Get(msgsum.Header) != msgsum.BodySum(body) {
			t.Fatal("checksum header lost")
		}
	})
}

func BenchmarkMessage(b *testing.B) {
	g := sharedGen(b, 1)
	env := envelope(2)
	for _, size := range defaultSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var v uint64
			for b.Loop() {
				_ = g.Message(env, size, v)
				v++
			}
		})
	}
}

// BenchmarkSource is what sending a message costs the generator: Source,
// then Size and WriteTo, as a session submits (internal/run/session).
func BenchmarkSource(b *testing.B) {
	g := sharedGen(b, 1)
	env := envelope(2)
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			var v uint64
			for b.Loop() {
				src := g.Source(env, size, v)
				_ = src.Size()
				src.WriteTo(io.Discard)
				v++
			}
		})
	}
}

// TestAppendDateMatchesAppendFormat: the cached Date text is AppendFormat's,
// for times in the same second and the next, in other zones, before 1970,
// and from goroutines at once.
func TestAppendDateMatchesAppendFormat(t *testing.T) {
	base := time.Date(2026, 12, 6, 23, 59, 58, 999_999_000, time.UTC)
	paris := time.FixedZone("CET", 3600)
	checkCachedFormat(t, base, 300*time.Millisecond, []time.Time{
		base, base.Add(500), base.Add(1001), base.Add(time.Second), base.Add(-time.Second),
		base.In(paris), base.Add(2 * time.Second).In(paris),
		time.Date(1969, 12, 31, 23, 59, 59, 500, time.UTC), time.Unix(0, 0), time.Unix(-1, 999_999_999),
		time.Date(9999, 1, 2, 3, 4, 5, 6, time.UTC),
	}, func(tm time.Time) error {
		got := string(appendDate([]byte("x"), tm))
		if want := "x" + tm.UTC().Format(dateLayout); got != want {
			return fmt.Errorf("appendDate(%v) = %q, want %q", tm, got, want)
		}
		return nil
	})
}

// TestAppendSentMatchesAppendFormat: the sent field's text, its seconds
// cached, is AppendFormat's RFC3339Nano of the time in UTC: fractions with
// and without trailing zeros, none, times in the same second and the next,
// other zones, before 1970, years past 9999, from goroutines at once.
func TestAppendSentMatchesAppendFormat(t *testing.T) {
	base := time.Date(2026, 12, 6, 23, 59, 58, 999_999_000, time.UTC)
	checkCachedFormat(t, base, 123_456_789, []time.Time{
		base, base.Add(1000), base.Add(1001), base.Add(time.Second), base.Truncate(time.Second), base.Add(-time.Second),
		base.Add(1), base.Add(10), base.In(time.FixedZone("CET", 3600)), base.In(time.FixedZone("X", -5*3600-1800)),
		time.Date(1969, 12, 31, 23, 59, 59, 500, time.UTC), time.Unix(0, 0), time.Unix(-1, 999_999_999), time.Unix(-1, 1),
		time.Date(9999, 12, 31, 23, 59, 59, 100_000_000, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 120, time.UTC),
	}, func(tm time.Time) error {
		got := string(appendSent([]byte("x"), tm))
		if want := "x" + tm.UTC().Format(time.RFC3339Nano); got != want {
			return fmt.Errorf("appendSent(%v) = %q, want %q", tm, got, want)
		}
		return nil
	})
}

// checkCachedFormat runs check, a comparison of a cached formatter with
// AppendFormat, on times, then from 8 goroutines at once on 2,000 times
// each, step apart from base (the cache changing hands between them).
func checkCachedFormat(t *testing.T, base time.Time, step time.Duration, times []time.Time, check func(time.Time) error) {
	t.Helper()
	for _, tm := range times {
		if err := check(tm); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				if err := check(base.Add(time.Duration(g*7+i) * step)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAppendClean: control characters and DEL become spaces, wherever they
// are; everything else is kept, UTF-8 included.
func TestAppendClean(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		"plain text":           "plain text",
		"a\r\nBcc: x@y":        "a  Bcc: x@y",
		"\x00start":            " start",
		"end\x7f":              "end ",
		"tab\tin\x1fmid\r":     "tab in mid ",
		"ünïcode \u2028 stays": "ünïcode \u2028 stays",
		"\x01\x02\x03":         "   ",
	} {
		if got := string(appendClean([]byte("p:"), in)); got != "p:"+want {
			t.Errorf("appendClean(%q) = %q, want %q", in, got, "p:"+want)
		}
	}
}

func TestSentAsIs(t *testing.T) {
	tests := []struct {
		data string
		want bool
	}{
		{"", true},
		{"\r\n", true},
		{"a line\r\nanother\r\n\r\n", true},
		{"a.b\r\n x\r\n", true},
		{".starts with a dot\r\n", false},
		{"ok\r\n.then a dot\r\n", false},
		{"bare LF\n", false},
		{"ok\r\nbare LF\n", false},
		{"bare CR\r in a line\r\n", false},
		{"CR CR LF\r\r\n", false},
		{"no line end", false},
		{"ok\r\nno line end", false},
		{"\n", false},
	}
	for _, tt := range tests {
		if got := sentAsIs([]byte(tt.data)); got != tt.want {
			t.Errorf("sentAsIs(%q) = %v, want %v", tt.data, got, tt.want)
		}
	}
}

// asIsRecorder is an AsIsWriter that records which method got which bytes.
type asIsRecorder struct {
	bytes.Buffer
	calls []string
}

func (r *asIsRecorder) Write(p []byte) (int, error) {
	r.calls = append(r.calls, fmt.Sprintf("Write %d", len(p)))
	return r.Buffer.Write(p)
}

func (r *asIsRecorder) WriteAsIs(p []byte) (int, error) {
	r.calls = append(r.calls, fmt.Sprintf("WriteAsIs %d", len(p)))
	return r.Buffer.Write(p)
}

// TestSourceWritesPooledBodiesAsIs: every pooled body, plain and multipart,
// qualifies for WriteAsIs (the DATA writer's fast path is the one a run
// takes), a Source gives its body to WriteAsIs and its header to Write, and
// the bytes are the message's.
func TestSourceWritesPooledBodiesAsIs(t *testing.T) {
	sizes := []int{1 << 10, 5 << 10, MultipartThreshold, 64 << 10}
	gen, err := NewGenerator(3, sizes)
	if err != nil {
		t.Fatal(err)
	}
	env := Envelope{ID: "id1", From: "a@x.test", To: []string{"b@x.test"}, Subject: "s", Sent: time.Unix(1_800_000_000, 0)}
	for _, size := range sizes {
		for v := range uint64(VariantsPerSize) {
			if b := gen.body(size, v); !b.asIs {
				t.Errorf("size %d variant %d: body not sent as is", size, v)
			}
			src := gen.Source(env, size, v)
			var rec asIsRecorder
			if _, err := src.WriteTo(&rec); err != nil {
				t.Fatal(err)
			}
			want := []string{fmt.Sprintf("Write %d", len(src.header)), fmt.Sprintf("WriteAsIs %d", len(src.body.data))}
			if fmt.Sprint(rec.calls) != fmt.Sprint(want) {
				t.Errorf("size %d variant %d: calls %v, want %v", size, v, rec.calls, want)
			}
			if !bytes.Equal(rec.Bytes(), gen.Message(env, size, v)) {
				t.Errorf("size %d variant %d: bytes differ from Message", size, v)
			}
		}
	}
	// A body that does not qualify goes through Write.
	dotted := []byte(".dot\r\n")
	src := &Source{header: []byte("H: 1\r\n\r\n"), body: &body{data: dotted, asIs: sentAsIs(dotted)}}
	var rec asIsRecorder
	if _, err := src.WriteTo(&rec); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rec.calls) != "[Write 8 Write 6]" {
		t.Errorf("a body with a leading dot: calls %v, want two Writes", rec.calls)
	}
}
