package imapclient

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mailbench/mailbench/measure"
)

// lsubTap collects the responses of one intercepted LSUB command.
type lsubTap struct {
	tag   string
	names []string // filled by the reader goroutine under transport.mu

	once sync.Once
	done chan struct{}
	err  error // set before done is closed
}

func (t *lsubTap) finish(err error) {
	t.once.Do(func() {
		t.err = err
		close(t.done)
	})
}

// finishStatus completes the tap from the tagged status line text after the
// tag, e.g. "OK done" or "NO [CANNOT] nope".
func (t *lsubTap) finishStatus(status string) {
	typ, _, _ := strings.Cut(status, " ")
	switch strings.ToUpper(typ) {
	case "OK":
		t.finish(nil)
	case "NO", "BAD":
		t.finish(&measure.ProtocolError{Op: "LSUB", Reply: truncate(status)})
	default:
		t.finish(&measure.ProtocolError{Op: "LSUB", Reply: truncate("unexpected status: " + status)})
	}
}

type respKind int

const (
	respOther respKind = iota
	respLSUB
	respTagged
)

// classify says whether resp (one complete server response) is an untagged
// LSUB reply (returning the mailbox name), the tap's tagged completion
// (returning the status text after the tag), or something else. A malformed
// LSUB line is "something else" and passes through to go-imap, which will
// then fail the connection.
func (t *lsubTap) classify(resp []byte) (name, status string, kind respKind) {
	line := resp
	if len(line) > len(t.tag) && string(line[:len(t.tag)]) == t.tag && line[len(t.tag)] == ' ' {
		return "", strings.TrimRight(string(line[len(t.tag)+1:]), "\r\n"), respTagged
	}
	if name, ok := parseLSUB(resp); ok {
		return name, "", respLSUB
	}
	return "", "", respOther
}

// parseLSUB parses `* LSUB (attrs) delim mailbox CRLF` and returns the
// mailbox name (modified UTF-7 decoded when valid). It doesn't perform I/O.
func parseLSUB(resp []byte) (string, bool) {
	const prefix = "* LSUB "
	if len(resp) < len(prefix) || !strings.EqualFold(string(resp[:len(prefix)]), prefix) {
		return "", false
	}
	p := resp[len(prefix):]
	// (attrs)
	if len(p) == 0 || p[0] != '(' {
		return "", false
	}
	closeIdx := bytes.IndexByte(p, ')')
	if closeIdx < 0 {
		return "", false
	}
	p = p[closeIdx+1:]
	if len(p) == 0 || p[0] != ' ' {
		return "", false
	}
	p = p[1:]
	// delimiter: NIL or a quoted char
	switch {
	case len(p) >= 3 && strings.EqualFold(string(p[:3]), "NIL"):
		p = p[3:]
	case len(p) > 0 && p[0] == '"':
		_, rest, ok := parseQuoted(p)
		if !ok {
			return "", false
		}
		p = rest
	default:
		return "", false
	}
	if len(p) == 0 || p[0] != ' ' {
		return "", false
	}
	p = p[1:]
	var raw string
	switch {
	case len(p) > 0 && p[0] == '"':
		s, rest, ok := parseQuoted(p)
		if !ok || !isCRLF(rest) {
			return "", false
		}
		raw = s
	case len(p) > 0 && p[0] == '{':
		nl := bytes.IndexByte(p, '\n')
		if nl < 0 {
			return "", false
		}
		n, ok := literalSuffix(p[:nl+1])
		if !ok || int64(len(p)-nl-1) < n {
			return "", false
		}
		lit := p[nl+1 : nl+1+int(n)]
		if !isCRLF(p[nl+1+int(n):]) {
			return "", false
		}
		raw = string(lit)
	default:
		end := bytes.IndexAny(p, " \r\n")
		if end <= 0 || !isCRLF(p[end:]) {
			return "", false
		}
		raw = string(p[:end])
	}
	if strings.EqualFold(raw, "INBOX") {
		return "INBOX", true
	}
	if dec, err := decodeMUTF7(raw); err == nil {
		return dec, true
	}
	return raw, true
}

func isCRLF(b []byte) bool { return string(b) == "\r\n" || string(b) == "\n" }

// parseQuoted parses an IMAP quoted string at the start of p.
func parseQuoted(p []byte) (s string, rest []byte, ok bool) {
	var sb strings.Builder
	for i := 1; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 >= len(p) {
				return "", nil, false
			}
			i++
			sb.WriteByte(p[i])
		case '"':
			return sb.String(), p[i+1:], true
		case '\r', '\n':
			return "", nil, false
		default:
			sb.WriteByte(c)
		}
	}
	return "", nil, false
}

var errBadMUTF7 = errors.New("invalid modified UTF-7")

var mutf7 = base64.NewEncoding("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+,").WithPadding(base64.NoPadding)

// decodeMUTF7 decodes an IMAP modified UTF-7 mailbox name (RFC 3501 §5.1.3).
func decodeMUTF7(s string) (string, error) {
	if !strings.Contains(s, "&") {
		return s, nil
	}
	var sb strings.Builder
	for len(s) > 0 {
		i := strings.IndexByte(s, '&')
		if i < 0 {
			sb.WriteString(s)
			break
		}
		sb.WriteString(s[:i])
		s = s[i+1:]
		j := strings.IndexByte(s, '-')
		if j < 0 {
			return "", errBadMUTF7
		}
		enc := s[:j]
		s = s[j+1:]
		if enc == "" {
			sb.WriteByte('&')
			continue
		}
		b, err := mutf7.DecodeString(enc)
		if err != nil || len(b)%2 != 0 {
			return "", errBadMUTF7
		}
		u := make([]uint16, len(b)/2)
		for k := range u {
			u[k] = uint16(b[2*k])<<8 | uint16(b[2*k+1])
		}
		sb.WriteString(string(utf16.Decode(u)))
	}
	out := sb.String()
	if !utf8.ValidString(out) {
		return "", errBadMUTF7
	}
	return out, nil
}

// lsubCommand renders the LSUB command line for tag.
func lsubCommand(tag string) []byte {
	return []byte(tag + ` LSUB "" "*"` + "\r\n")
}

// truncate limits a server reply quoted in an error.
func truncate(s string) string {
	const max = 200
	s = strings.TrimRight(s, "\r\n")
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
