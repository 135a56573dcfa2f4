package tomlstrict

import (
	"strconv"
	"strings"
)

// pathElem is one step of a key path: a table key or an array index.
type pathElem struct {
	key     string
	index   int
	isIndex bool
}

// Path names one value of a TOML document, e.g. messages.sizes[2].share.
type Path []pathElem

// PathOf is the path of nested table keys.
func PathOf(keys ...string) Path {
	p := make(Path, len(keys))
	for i, k := range keys {
		p[i] = pathElem{key: k}
	}
	return p
}

// With returns a copy of p extended by key.
func (p Path) With(key string) Path {
	q := make(Path, len(p), len(p)+1)
	copy(q, p)
	return append(q, pathElem{key: key})
}

// At returns a copy of p extended by array index i.
func (p Path) At(i int) Path {
	q := make(Path, len(p), len(p)+1)
	copy(q, p)
	return append(q, pathElem{index: i, isIndex: true})
}

// String renders p as in error messages: dotted keys, quoted when they are
// not bare TOML keys, and [i] for array elements.
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		if e.isIndex {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(e.key) {
			b.WriteString(e.key)
		} else {
			b.WriteString(strconv.Quote(e.key))
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBareKeyByte(s[i]) {
			return false
		}
	}
	return true
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Lines maps the rendered key paths of a TOML document (Path.String
// form) to the 1-based line where each is first defined: table headers,
// keys (and the implicit tables of dotted keys), keys of inline tables and
// elements of arrays. It is a tolerant scanner, not a validator: it never
// fails, and on input it does not understand it skips to the next line.
// It doesn't perform I/O.
type Lines map[string]int

// ScanLines records the line of every key of src; it never fails (what it
// cannot lex has no line).
func ScanLines(src []byte) Lines {
	s := &keyScanner{src: src, line: 1, lines: Lines{}, arrays: map[string]int{}}
	s.document()
	return s.lines
}

// Locate returns the line of p: its own definition, else the first line of
// anything defined under it, else the line of its nearest defined ancestor,
// else 0.
func (kl Lines) Locate(p Path) int {
	for n := len(p); n > 0; n-- {
		q := p[:n]
		if l, ok := kl[q.String()]; ok {
			return l
		}
		if n == len(p) {
			if l := kl.FirstUnder(q.String()); l > 0 {
				return l
			}
		}
	}
	return 0
}

// FirstUnder is the first line of a key under prefix (a rendered path), 0
// when there is none.
func (kl Lines) FirstUnder(prefix string) int {
	best := 0
	for k, l := range kl {
		if len(k) > len(prefix) && strings.HasPrefix(k, prefix) && (k[len(prefix)] == '.' || k[len(prefix)] == '[') {
			if best == 0 || l < best {
				best = l
			}
		}
	}
	return best
}

// Has reports whether p itself is written in the document.
func (kl Lines) Has(p Path) bool {
	_, ok := kl[p.String()]
	return ok
}

type keyScanner struct {
	src    []byte
	pos    int
	line   int
	lines  Lines
	arrays map[string]int // array-of-tables path -> number of elements so far
	table  Path           // current table from the last header
	depth  int            // nesting of inline values, bounded
}

func (s *keyScanner) peek() byte {
	if s.pos < len(s.src) {
		return s.src[s.pos]
	}
	return 0
}

func (s *keyScanner) next() byte {
	c := s.peek()
	if s.pos < len(s.src) {
		s.pos++
		if c == '\n' {
			s.line++
		}
	}
	return c
}

func (s *keyScanner) record(p Path, line int) {
	for n := 1; n <= len(p); n++ {
		k := p[:n].String()
		if _, ok := s.lines[k]; !ok {
			s.lines[k] = line
		}
	}
}

// skipSpace skips blanks and, when newlines is set, newlines and comments.
func (s *keyScanner) skipSpace(newlines bool) {
	for s.pos < len(s.src) {
		switch c := s.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			s.next()
		case newlines && c == '\n':
			s.next()
		case newlines && c == '#':
			s.skipLine()
		default:
			return
		}
	}
}

// skipLine moves to the start of the next line.
func (s *keyScanner) skipLine() {
	for s.pos < len(s.src) && s.peek() != '\n' {
		s.next()
	}
	s.next()
}

func (s *keyScanner) document() {
	for {
		s.skipSpace(true)
		if s.pos >= len(s.src) {
			return
		}
		start := s.pos
		if s.peek() == '[' {
			s.header()
		} else {
			s.keyValue(s.table)
		}
		if s.pos == start { // no progress: give up on this line
			s.skipLine()
		}
	}
}

func (s *keyScanner) header() {
	line := s.line
	s.next()
	array := s.peek() == '['
	if array {
		s.next()
	}
	s.skipSpace(false)
	keys, ok := s.key()
	if !ok {
		s.skipLine()
		return
	}
	s.skipSpace(false)
	if s.peek() != ']' {
		s.skipLine()
		return
	}
	s.next()
	if array {
		if s.peek() != ']' {
			s.skipLine()
			return
		}
		s.next()
	}
	// Resolve each prefix that is an array of tables to its current element.
	var p Path
	for _, k := range keys {
		p = p.With(k)
		if n, ok := s.arrays[p.String()]; ok && n > 0 {
			p = p.At(n - 1)
		}
	}
	if array {
		// The last step named the array itself: start a new element.
		if len(p) > 0 && p[len(p)-1].isIndex {
			p = p[:len(p)-1]
		}
		n := s.arrays[p.String()]
		s.arrays[p.String()] = n + 1
		s.record(p, line)
		p = p.At(n)
	}
	s.record(p, line)
	s.table = p
	s.skipSpace(false)
	if s.peek() == '#' || s.peek() == '\n' {
		s.skipLine()
	}
}

// keyValue reads `key = value` and records the key under base.
func (s *keyScanner) keyValue(base Path) bool {
	line := s.line
	keys, ok := s.key()
	if !ok {
		return false
	}
	s.skipSpace(false)
	if s.peek() != '=' {
		return false
	}
	s.next()
	p := base
	for _, k := range keys {
		p = p.With(k)
	}
	s.record(p, line)
	s.skipSpace(false)
	s.value(p)
	return true
}

// key reads a possibly dotted, possibly quoted key.
func (s *keyScanner) key() ([]string, bool) {
	var keys []string
	for {
		s.skipSpace(false)
		var k string
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			str, ok := s.quoted(c)
			if !ok {
				return nil, false
			}
			k = str
		case isBareKeyByte(c):
			start := s.pos
			for s.pos < len(s.src) && isBareKeyByte(s.peek()) {
				s.next()
			}
			k = string(s.src[start:s.pos])
		default:
			return nil, false
		}
		keys = append(keys, k)
		s.skipSpace(false)
		if s.peek() != '.' {
			return keys, true
		}
		s.next()
	}
}

// quoted reads a single-line basic or literal string and returns its value
// (escapes of basic strings are decoded where strconv understands them).
func (s *keyScanner) quoted(q byte) (string, bool) {
	start := s.pos
	s.next()
	for s.pos < len(s.src) {
		c := s.next()
		switch {
		case c == '\n':
			return "", false
		case c == '\\' && q == '"':
			s.next()
		case c == q:
			raw := string(s.src[start:s.pos])
			if q == '\'' {
				return raw[1 : len(raw)-1], true
			}
			if v, err := strconv.Unquote(raw); err == nil {
				return v, true
			}
			return raw[1 : len(raw)-1], true
		}
	}
	return "", false
}

// value skips one value, recording the keys of inline tables and the
// elements of arrays under p.
func (s *keyScanner) value(p Path) {
	if s.depth > 64 {
		s.skipLine()
		return
	}
	s.depth++
	defer func() { s.depth-- }()
	switch c := s.peek(); c {
	case '"', '\'':
		if s.pos+2 < len(s.src) && s.src[s.pos+1] == c && s.src[s.pos+2] == c {
			s.multiline(c)
			return
		}
		if _, ok := s.quoted(c); !ok {
			return
		}
	case '{':
		s.next()
		for s.pos < len(s.src) {
			s.skipSpace(false)
			switch s.peek() {
			case '}':
				s.next()
				return
			case ',':
				s.next()
				continue
			case '\n', 0:
				return
			}
			if !s.keyValue(p) {
				return
			}
		}
	case '[':
		s.next()
		for i := 0; s.pos < len(s.src); {
			s.skipSpace(true)
			switch s.peek() {
			case ']':
				s.next()
				return
			case ',':
				s.next()
				i++
				continue
			case 0:
				return
			}
			start := s.pos
			el := p.At(i)
			s.record(el, s.line)
			s.value(el)
			if s.pos == start {
				return
			}
		}
	default:
		for s.pos < len(s.src) {
			switch s.peek() {
			case ',', ']', '}', '\n', '#':
				return
			}
			s.next()
		}
	}
}

func (s *keyScanner) multiline(q byte) {
	s.pos += 3
	for s.pos < len(s.src) {
		if s.peek() == '\\' && q == '"' {
			s.next()
			s.next()
			continue
		}
		if s.pos+2 < len(s.src) && s.src[s.pos] == q && s.src[s.pos+1] == q && s.src[s.pos+2] == q {
			s.pos += 3
			for s.peek() == q { // up to two quotes may end the content
				s.next()
			}
			return
		}
		s.next()
	}
}
