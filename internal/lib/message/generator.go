package message

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	gomessage "github.com/emersion/go-message"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
)

const (
	// HeaderAllowance is the part of a size bucket reserved for the
	// per-message header: bodies of bucket S are S - HeaderAllowance bytes
	// long. It matches the header of an envelope with one or two recipients.
	HeaderAllowance = 448
	// MinBodySize is the smallest pooled body, whatever the bucket.
	MinBodySize = 64
	// MultipartThreshold is the smallest bucket whose bodies are
	// multipart/mixed with a base64 attachment.
	MultipartThreshold = 8 << 10
	// VariantsPerSize is how many distinct bodies each bucket pools.
	VariantsPerSize = 4
	// MaxSize is the largest size bucket NewGenerator accepts.
	MaxSize = 64 << 20

	maxLine = 76
)

// Envelope is what varies per message: identity, addresses, subject and
// the time the sender stamps.
type Envelope struct {
	ID      string    // unique per run, see delivery.NewID; becomes Message-Id <ID@mailbench>
	From    string    // bare address, e.g. user1@example.test
	To      []string  // bare addresses
	Subject string    // free text; CR and LF are replaced by spaces, non-ASCII is RFC 2047 encoded
	Sent    time.Time // stamped as Date and as X-Mailbench-Sent (RFC 3339, nanoseconds, UTC)
}

// body is one pooled, immutable MIME body.
type body struct {
	contentFields []byte // the body's Content-* header fields, CRLF-terminated
	data          []byte // everything after the header/body blank line
	sum           []byte // msgsum.BodySum(data)
	asIs          bool   // sentAsIs(data): SMTP's DATA sends data unchanged
}

// sentAsIs reports whether SMTP's DATA sends data unchanged: every line
// ends in CRLF (no bare CR or LF), no line begins with "." (nothing to
// dot-stuff), and data ends at a line end.
func sentAsIs(data []byte) bool {
	for len(data) > 0 {
		if data[0] == '.' {
			return false
		}
		lf := bytes.IndexByte(data, '\n')
		if lf < 1 || data[lf-1] != '\r' || bytes.IndexByte(data[:lf-1], '\r') >= 0 {
			return false
		}
		data = data[lf+1:]
	}
	return true
}

// AsIsWriter is a writer that can take bytes it would send unchanged
// without looking at them: SMTP's DATA writer (smtp.DataCommand, which
// otherwise scans every line for dot-stuffing). WriteAsIs's caller
// guarantees that b's lines all end in CRLF, none begins with ".", and b
// ends at a line end.
type AsIsWriter interface {
	io.Writer
	WriteAsIs(b []byte) (int, error)
}

// Generator renders test messages from a pool of pre-built bodies. It is
// safe for concurrent use after NewGenerator returns; its methods don't
// perform network I/O.
type Generator struct {
	seed  int64
	sizes []int
	pool  map[int][]*body
}

// NewGenerator builds the body pool for the given size buckets (in bytes,
// each in (0, MaxSize]; duplicates are ignored). The pool depends only on
// seed and the sizes: the same arguments give byte-identical bodies.
func NewGenerator(seed int64, sizes []int) (*Generator, error) {
	if len(sizes) == 0 {
		return nil, errors.New("message: no size buckets")
	}
	g := &Generator{seed: seed, pool: make(map[int][]*body, len(sizes))}
	for _, s := range sizes {
		if s <= 0 || s > MaxSize {
			return nil, fmt.Errorf("message: size bucket %d out of range (1..%d)", s, MaxSize)
		}
		if _, ok := g.pool[s]; ok {
			continue
		}
		g.sizes = append(g.sizes, s)
		vs := make([]*body, VariantsPerSize)
		for v := range vs {
			b, err := buildBody(seed, s, v)
			if err != nil {
				return nil, fmt.Errorf("message: building %d-byte body: %w", s, err)
			}
			vs[v] = b
		}
		g.pool[s] = vs
	}
	slices.Sort(g.sizes)
	return g, nil
}

// Sizes returns the size buckets, ascending. The caller may modify the
// returned slice.
func (g *Generator) Sizes() []int { return slices.Clone(g.sizes) }

// BodyTarget is the length of the pooled bodies of bucket size.
func BodyTarget(size int) int { return max(size-HeaderAllowance, MinBodySize) }

func (g *Generator) body(size int, variant uint64) *body {
	vs, ok := g.pool[size]
	if !ok {
		panic(fmt.Sprintf("message: %d is not a size bucket of this Generator", size))
	}
	return vs[variant%uint64(len(vs))]
}

// Message returns the whole message (header and body) in one new buffer.
// size must be one of the Generator's buckets (it panics otherwise);
// variant picks the pooled body (modulo VariantsPerSize).
func (g *Generator) Message(env Envelope, size int, variant uint64) []byte {
	b := g.body(size, variant)
	buf := make([]byte, 0, 512+len(env.Subject)+32*len(env.To)+len(b.data))
	buf = appendHeader(buf, env, b)
	return append(buf, b.data...)
}

// Source returns the message as an io.WriterTo with a Size method, for APIs
// that take one (e.g. smtpclient.Client.Send), without copying the body:
// WriteTo writes the header and then the shared pooled body. The header is
// rendered here, once: neither Size nor WriteTo renders or allocates, so a
// caller that times the sending of a Source times the writing alone. size
// must be a bucket (Source panics otherwise).
func (g *Generator) Source(env Envelope, size int, variant uint64) *Source {
	b := g.body(size, variant)
	s := &Source{body: b}
	buf := s.room[:0]
	if n := 512 + len(env.Subject) + 32*len(env.To); n > len(s.room) {
		buf = make([]byte, 0, n)
	}
	s.header = appendHeader(buf, env, b)
	return s
}

// Source is one message: its rendered header and its pooled body. See
// Generator.Source. It is immutable and safe for concurrent use.
type Source struct {
	header []byte
	body   *body // the Generator's pooled body: never written
	// room holds the header when it fits: one allocation per Source.
	room [768]byte
}

// WriteTo writes the message to w in two writes (header, body) and returns
// the number of bytes written. To an AsIsWriter it writes the body with
// WriteAsIs when the body qualifies (checked once, when the pool was
// built): SMTP's DATA then copies it without scanning it.
func (s *Source) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.header)
	if err != nil {
		return int64(n), err
	}
	var m int
	if aw, ok := w.(AsIsWriter); ok && s.body.asIs {
		m, err = aw.WriteAsIs(s.body.data)
	} else {
		m, err = w.Write(s.body.data)
	}
	return int64(n + m), err
}

// Size is the exact length in bytes WriteTo writes.
func (s *Source) Size() int64 { return int64(len(s.header) + len(s.body.data)) }

// appendHeader renders the per-message header, including the blank line
// that ends it. It allocates nothing when dst has room.
func appendHeader(dst []byte, env Envelope, b *body) []byte {
	dst = append(dst, "Date: "...)
	// No day-of-week (optional in RFC 5322 3.3): net/mail.ParseDate, which
	// go-imap runs on the Date of every ENVELOPE the generator fetches,
	// tries its 24 layouts without one first, and each failed time.Parse
	// allocates an error (3 allocations); "2 Jan 2006 …" is its first layout.
	dst = appendDate(dst, env.Sent)
	dst = append(dst, "\r\nFrom: "...)
	dst = appendClean(dst, env.From)
	dst = append(dst, "\r\nTo: "...)
	col := len("To: ")
	for i, a := range env.To {
		if i > 0 {
			dst = append(dst, ',')
			col++
			if col+1+len(a) > maxLine {
				dst = append(dst, "\r\n"...)
				col = 0
			}
			dst = append(dst, ' ')
			col++
		}
		dst = appendClean(dst, a)
		col += len(a)
	}
	dst = append(dst, "\r\nSubject: "...)
	dst = appendSubject(dst, env.Subject)
	dst = append(dst, "\r\nMessage-Id: <"...)
	dst = appendClean(dst, env.ID)
	dst = append(dst, "@mailbench>\r\nMIME-Version: 1.0\r\n"...)
	dst = append(dst, b.contentFields...)
	dst = append(dst, HeaderID+": "...)
	dst = appendClean(dst, env.ID)
	dst = append(dst, "\r\n"+HeaderSent+": "...)
	dst = appendSent(dst, env.Sent)
	dst = append(dst, "\r\n"+HeaderSum+": "...)
	dst = append(dst, b.sum...)
	return append(dst, "\r\n\r\n"...)
}

// dateLayout is the Date field's layout (see appendHeader).
const dateLayout = "2 Jan 2006 15:04:05 -0700"

// dateText is the Date field's text for one second, UTC.
type dateText struct {
	unix int64
	text []byte // never written after it is stored
}

// lastDate is the Date text of the second a message was last made in.
// Sessions make many messages a second, and the layout formatter was a
// quarter of what rendering a header cost (time.Time.AppendFormat, 3.5% of
// bench/submit's user time).
var lastDate atomic.Pointer[dateText]

// appendDate appends t as the Date field's value: t.UTC() in dateLayout,
// as AppendFormat gives it.
func appendDate(dst []byte, t time.Time) []byte {
	u := t.UTC()
	unix := u.Unix()
	if d := lastDate.Load(); d != nil && d.unix == unix {
		return append(dst, d.text...)
	}
	d := &dateText{unix: unix, text: u.AppendFormat(nil, dateLayout)}
	lastDate.Store(d)
	return append(dst, d.text...)
}

// lastSent is the sent field's text, to the second, of the second a
// message was last made in (as lastDate).
var lastSent atomic.Pointer[dateText]

// appendSent appends t as the sent field's value: t.UTC() in
// time.RFC3339Nano, as AppendFormat gives it (the fraction without its
// trailing zeros, none when it is zero), the seconds from a cache.
func appendSent(dst []byte, t time.Time) []byte {
	u := t.UTC()
	unix := u.Unix()
	d := lastSent.Load()
	if d == nil || d.unix != unix {
		d = &dateText{unix: unix, text: u.Truncate(time.Second).AppendFormat(nil, "2006-01-02T15:04:05")}
		lastSent.Store(d)
	}
	dst = append(dst, d.text...)
	if ns := u.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		end := len(frac)
		for frac[end-1] == '0' {
			end--
		}
		dst = append(dst, frac[:end]...)
	}
	return append(dst, 'Z')
}

// appendClean appends s with CR, LF and other control characters replaced
// by spaces, so no header field can be injected or broken. A clean s (the
// usual case) is appended in one copy.
func appendClean(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			dst = append(dst, s[:i]...)
			for ; i < len(s); i++ {
				c := s[i]
				if c < ' ' || c == 0x7f {
					c = ' '
				}
				dst = append(dst, c)
			}
			return dst
		}
	}
	return append(dst, s...)
}

func appendSubject(dst []byte, s string) []byte {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return appendClean(dst, s)
	}
	clean := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return append(dst, mime.QEncoding.Encode("utf-8", clean)...)
}

// words is the vocabulary of generated text.
var words = strings.Fields(`the of and to in is it that for on with as was at by be this from
or have an are not but had his they you were her she which all their one there been has
when who will more no if out so said what up its about into than them can only other new
some could time these two may then do first any my now such like our over man me even most
made after also did many before must through back years where much your way well down
should because each just those people how too little state good very make world still own
see men work long get here between both life being under never day same another know while
last might us great old year off come since against go came right used take three meeting
report budget project schedule server mailbox quarterly review draft attached please thanks`)

// rngFor returns the generator of one pooled body.
func rngFor(seed int64, size, variant int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(size)<<8|uint64(variant)))
}

// appendText appends n bytes of wrapped text: lines of words, each at most
// maxLine characters plus CRLF. n must be at least 2; the text ends in CRLF.
func appendText(dst []byte, r *rand.Rand, n int) []byte {
	end := len(dst) + n
	for {
		left := end - len(dst)
		if left <= maxLine+2 {
			// Last line: exactly left-2 characters of words, then CRLF.
			line := left - 2
			start := len(dst)
			for len(dst)-start < line {
				w := words[r.IntN(len(words))]
				if len(dst) > start {
					dst = append(dst, ' ')
				}
				dst = append(dst, w...)
			}
			dst = dst[:start+line]
			if line > 0 && dst[len(dst)-1] == ' ' {
				dst[len(dst)-1] = '.'
			}
			return append(dst, "\r\n"...)
		}
		// A full line, leaving at least 3 bytes for the last one.
		limit := min(maxLine, left-2-3)
		start := len(dst)
		for {
			w := words[r.IntN(len(words))]
			sep := 0
			if len(dst) > start {
				sep = 1
			}
			if len(dst)-start+sep+len(w) > limit {
				break
			}
			if sep == 1 {
				dst = append(dst, ' ')
			}
			dst = append(dst, w...)
		}
		if len(dst) == start { // limit shorter than any word
			dst = append(dst, "ok"[:min(2, limit)]...)
		}
		dst = append(dst, "\r\n"...)
	}
}

// buildBody renders one pooled body with go-message and splits it from the
// entity header, keeping the Content-* fields.
func buildBody(seed int64, size, variant int) (*body, error) {
	r := rngFor(seed, size, variant)
	target := BodyTarget(size)
	var entity []byte
	var err error
	if size < MultipartThreshold {
		entity, err = buildText(r, target)
	} else {
		entity, err = buildMultipart(seed, size, variant, target)
	}
	if err != nil {
		return nil, err
	}
	hdr, data, ok := bytes.Cut(entity, []byte("\r\n\r\n"))
	if !ok {
		return nil, errors.New("no header/body separator in rendered entity")
	}
	var fields []byte
	for _, f := range splitFields(hdr) {
		if len(f) > 8 && strings.EqualFold(string(f[:8]), "content-") {
			fields = append(fields, f...)
		}
	}
	return &body{contentFields: fields, data: data, sum: []byte(msgsum.BodySum(data)), asIs: sentAsIs(data)}, nil
}

// splitFields splits a raw header (without the final blank line) into
// fields, each with its folded continuation lines and trailing CRLF.
func splitFields(hdr []byte) [][]byte {
	var out [][]byte
	lines := bytes.SplitAfter(append(slices.Clone(hdr), "\r\n"...), []byte("\r\n"))
	for _, l := range lines {
		if len(l) == 0 {
			continue
		}
		if (l[0] == ' ' || l[0] == '\t') && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], l...)
			continue
		}
		out = append(out, l)
	}
	return out
}

func buildText(r *rand.Rand, target int) ([]byte, error) {
	var h gomessage.Header
	h.Set("Content-Type", "text/plain; charset=us-ascii")
	h.Set("Content-Transfer-Encoding", "7bit")
	var buf bytes.Buffer
	w, err := gomessage.CreateWriter(&buf, h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(appendText(nil, r, target)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// buildMultipart renders a multipart/mixed body of about target bytes: a
// text part and a base64 attachment sized so the whole body hits target.
// The attachment size is corrected from the rendered length, twice at most.
func buildMultipart(seed int64, size, variant, target int) ([]byte, error) {
	const textLen = 1024
	raw := (target - textLen - 512) * 57 / 78 // base64: 57 raw bytes per 78-byte line
	var entity []byte
	for range 3 {
		r := rngFor(seed, size, variant)
		e, err := renderMultipart(r, textLen, max(raw, 1))
		if err != nil {
			return nil, err
		}
		entity = e
		_, data, _ := bytes.Cut(e, []byte("\r\n\r\n"))
		diff := target - len(data)
		if diff == 0 {
			break
		}
		raw += diff * 57 / 78
		if diff > 0 && diff*57/78 == 0 {
			break
		}
	}
	return entity, nil
}

func renderMultipart(r *rand.Rand, textLen, rawLen int) ([]byte, error) {
	boundary := fmt.Sprintf("mailbench-%016x%016x", r.Uint64(), r.Uint64())
	var h gomessage.Header
	h.SetContentType("multipart/mixed", map[string]string{"boundary": boundary})
	var buf bytes.Buffer
	w, err := gomessage.CreateWriter(&buf, h)
	if err != nil {
		return nil, err
	}
	var th gomessage.Header
	th.Set("Content-Type", "text/plain; charset=us-ascii")
	th.Set("Content-Transfer-Encoding", "7bit")
	th.Set("Content-Disposition", "inline")
	tw, err := w.CreatePart(th)
	if err != nil {
		return nil, err
	}
	if _, err := tw.Write(appendText(nil, r, textLen)); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var ah gomessage.Header
	ah.Set("Content-Type", "application/octet-stream")
	ah.Set("Content-Transfer-Encoding", "base64")
	ah.SetContentDisposition("attachment", map[string]string{"filename": "data.bin"})
	aw, err := w.CreatePart(ah)
	if err != nil {
		return nil, err
	}
	data := make([]byte, rawLen)
	for i := 0; i+8 <= len(data); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	for i := len(data) &^ 7; i < len(data); i++ {
		data[i] = byte(r.Uint32())
	}
	if _, err := aw.Write(data); err != nil {
		return nil, err
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// messageIDDomain is the domain part of the Message-Id of every message
// the generator writes: <ID@mailbench>.
const messageIDDomain = "mailbench"

// IDFromMessageID returns the ID of a Message-Id the generator wrote,
// with or without its angle brackets (an ENVELOPE gives it without);
// "" when the value is not one of mailbench's.
func IDFromMessageID(v string) string {
	v = strings.TrimSpace(v)
	v = strings.TrimSuffix(strings.TrimPrefix(v, "<"), ">")
	id, domain, ok := strings.Cut(v, "@")
	if !ok || domain != messageIDDomain || id == "" || id[0] != 'r' {
		return ""
	}
	return id
}
