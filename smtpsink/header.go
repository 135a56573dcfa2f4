package smtpsink

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/mailbench/mailbench/internal/lib/message"
)

// errMalformedHeader is scanHeader's error for a header that go-message's
// textproto.ReadHeader refuses as malformed (dataFailure maps both to
// errBadHeader).
var errMalformedHeader = errors.New("smtpsink: malformed message header")

// The header fields the sink reads, by index into headerFields.spans.
const (
	fieldID = iota
	fieldSent
	fieldSum
	numFields
)

// fieldNames are the canonical names of the fields the sink reads; a key
// matches one when textproto.CanonicalMIMEHeaderKey(key) equals it, which
// for these names (letters and '-' only) is an ASCII case-insensitive match.
var fieldNames = [numFields]string{fieldID: HeaderID, fieldSent: HeaderSent, fieldSum: HeaderSum}

// maxFieldName is the longest of fieldNames: a longer key matches none.
const maxFieldName = 16

// headerFields holds the values of the fields the sink reads: each the first
// occurrence's value as go-message's Header.Get returns it (surrounding
// blanks trimmed, folded lines joined with one space). The values are
// spans of vals; have says which fields occurred.
type headerFields struct {
	vals  []byte
	spans [numFields][2]int
	have  [numFields]bool
	str   string // vals as a string, made by strings
}

// get returns the value of field i ("" if absent). Call strings first.
func (h *headerFields) get(i int) string {
	if !h.have[i] {
		return ""
	}
	return h.str[h.spans[i][0]:h.spans[i][1]]
}

// strings makes the values strings: one allocation for all of them.
func (h *headerFields) strings() {
	h.str = string(h.vals)
}

// scanHeader reads a message header from r exactly as go-message's
// textproto.ReadHeader (v0.18.2) does, and keeps only the fields in
// fieldNames. It makes the same calls on r in the same order (Peek,
// ReadLine, ReadByte, UnreadByte), so that it stops at the same byte and
// sees (and consumes) the same read errors; it returns nil where
// ReadHeader returns nil, the same error where ReadHeader passes a read
// error on (io.EOF too: a header ended by the end of data without a blank
// line), and errMalformedHeader where ReadHeader makes an error of its own.
// With a nil or io.EOF error h has what Header.Get would return for the
// fields ReadHeader had added (a field cut short by an error is not).
// ReadHeader builds every field (key canonicalized, value joined, a map
// of all of them); this builds none, which is most of the sink's
// allocations per message. TestScanHeaderMatchesReadHeader checks the
// equivalence. It doesn't perform I/O other than reading r.
func scanHeader(r *bufio.Reader, h *headerFields) error {
	// The first line cannot start with a blank (ReadHeader reads it whole,
	// then fails).
	if buf, err := r.Peek(1); err == nil && isBlank(buf[0]) {
		for {
			_, more, err := r.ReadLine()
			if err != nil {
				return err
			}
			if !more {
				return errMalformedHeader
			}
		}
	}
	for {
		// The first line of a field (textproto's readContinuedLineSlice).
		var f fieldScan
		f.start(h)
		n := 0
		for {
			l, more, err := r.ReadLine()
			if err != nil {
				f.drop(h)
				if err == io.EOF && n == 0 {
					return nil // the end of data ends the header
				}
				return err
			}
			n += len(l)
			f.firstLine(h, l)
			if !more {
				break
			}
		}
		if n == 0 {
			return nil // the blank line that ends the header
		}
		f.endPiece(h, false)
		// Continuation lines; a read error ends the field (the error comes
		// back on the next read, if the reader repeats it).
		for hasContinuation(r) {
			f.startPiece(h)
			partial := false
			for {
				l, more, err := r.ReadLine()
				if err != nil {
					partial = true
					break
				}
				f.chunk(h, l)
				if !more {
					break
				}
			}
			f.endPiece(h, partial)
			if partial {
				break
			}
		}
		switch {
		case !f.colon || f.badKey:
			// ReadHeader: no colon in the first line (a colon in a
			// continuation line puts CR LF into the key), or a key byte
			// outside 33..126 once blanks around it are trimmed.
			f.drop(h)
			return errMalformedHeader
		case f.field < 0:
			f.drop(h) // another field, or an empty key (ReadHeader skips it)
		default:
			h.have[f.field] = true
			h.spans[f.field] = [2]int{f.valStart, len(h.vals)}
		}
	}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// hasContinuation is textproto's hasContinuationLine: a read error is
// consumed here (bufio returns it once) and ends the field.
func hasContinuation(r *bufio.Reader) bool {
	c, err := r.ReadByte()
	if err != nil {
		return false
	}
	r.UnreadByte()
	return isBlank(c)
}

// fieldScan is the state of one header field while its lines are read.
type fieldScan struct {
	colon bool // the first line's colon was seen

	// The key: the first line up to its first colon. It must be blanks,
	// then bytes 33..126, then blanks (keyState 0, 1, 2).
	keyState int
	badKey   bool
	key      [maxFieldName]byte
	keyLen   int // key bytes without the blanks around them

	field int // index into fieldNames, or -1: value not kept

	// The value, kept only for a wanted field that has not occurred yet:
	// appended to h.vals from valStart; each piece (the rest of the
	// first line, then each continuation line) is trimmed at its end,
	// and pieces are joined with one space.
	keep       bool
	valStart   int
	pieceStart int // where the current piece's bytes begin in h.vals
}

func (f *fieldScan) start(h *headerFields) {
	f.field = -1
	f.valStart = len(h.vals)
	f.pieceStart = len(h.vals)
}

// firstLine takes a part of the field's first line.
func (f *fieldScan) firstLine(h *headerFields, l []byte) {
	if f.colon {
		f.chunk(h, l)
		return
	}
	i := bytes.IndexByte(l, ':')
	key := l
	if i >= 0 {
		key = l[:i]
	}
	for _, c := range key {
		switch {
		case isBlank(c):
			if f.keyState == 1 {
				f.keyState = 2
			}
		case c >= 33 && c <= 126:
			if f.keyState == 2 {
				f.badKey = true // a blank inside the key
			}
			f.keyState = 1
			if f.keyLen < len(f.key) {
				f.key[f.keyLen] = c
			}
			f.keyLen++
		default:
			f.badKey = true
		}
	}
	if i < 0 {
		return
	}
	f.colon = true
	if !f.badKey && f.keyLen <= len(f.key) {
		for j, name := range fieldNames {
			if !h.have[j] && message.FieldNameIs(f.key[:f.keyLen], name) {
				f.field, f.keep = j, true
				break
			}
		}
	}
	f.chunk(h, l[i+1:])
}

func (f *fieldScan) startPiece(h *headerFields) {
	if !f.keep {
		return
	}
	f.pieceStart = len(h.vals)
	if f.pieceStart > f.valStart {
		h.vals = append(h.vals, ' ') // removed again if the piece is blank
	}
}

func (f *fieldScan) chunk(h *headerFields, l []byte) {
	if f.keep {
		h.vals = append(h.vals, l...)
	}
}

// endPiece trims the piece just read. A piece cut short by a read error
// first loses one trailing CR, as in ReadHeader (which adds CR LF only after
// whole lines, then strips one CR before each LF it splits at); bufio's
// ReadLine never ends a part that has more to come with a CR, so this is
// for fidelity only.
func (f *fieldScan) endPiece(h *headerFields, partial bool) {
	if !f.keep {
		return
	}
	v := h.vals
	body := f.pieceStart
	if body > f.valStart {
		body++ // after the joining space
	}
	end := len(v)
	if partial && end > body && v[end-1] == '\r' {
		end--
	}
	for end > body && isBlank(v[end-1]) {
		end--
	}
	start := body
	for start < end && isBlank(v[start]) {
		start++
	}
	if start == end {
		h.vals = v[:f.pieceStart] // blank: no piece, no space
		return
	}
	n := copy(v[body:], v[start:end])
	h.vals = v[:body+n]
}

// drop forgets the value of a field that is not kept.
func (f *fieldScan) drop(h *headerFields) {
	if f.keep {
		h.vals = h.vals[:f.valStart]
	}
}
