package workload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// FetchItem is one data item of an IMAP FETCH (RFC 9051 §6.4.5) as a
// client profile lists it: an atom such as UID or RFC822.SIZE, or a body
// section (BODY[...] or BODY.PEEK[...], with a part, a section text, header
// field names and a partial range).
type FetchItem struct {
	// Name is the item's atom, upper case: UID, FLAGS, INTERNALDATE,
	// RFC822.SIZE, ENVELOPE, BODYSTRUCTURE, MODSEQ, BODY or BODY.PEEK.
	Name string
	// For BODY and BODY.PEEK: the part (1.2 is {1, 2}), the section text
	// ("", HEADER, HEADER.FIELDS, HEADER.FIELDS.NOT, TEXT or MIME), the
	// field names of HEADER.FIELDS (.NOT), as written, and the partial
	// range (<offset.count>; Count 0: none).
	Part          []int
	Section       string
	Fields        []string
	Offset, Count int64
}

// IsBody reports whether the item is a body section.
func (it FetchItem) IsBody() bool { return it.Name == "BODY" || it.Name == "BODY.PEEK" }

// String renders the item as it goes on the wire.
func (it FetchItem) String() string {
	if !it.IsBody() {
		return it.Name
	}
	var b strings.Builder
	b.WriteString(it.Name + "[")
	for i, p := range it.Part {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(p))
	}
	if it.Section != "" {
		if len(it.Part) > 0 {
			b.WriteByte('.')
		}
		b.WriteString(it.Section)
	}
	if len(it.Fields) > 0 {
		b.WriteString(" (" + strings.Join(it.Fields, " ") + ")")
	}
	b.WriteByte(']')
	if it.Count > 0 {
		fmt.Fprintf(&b, "<%d.%d>", it.Offset, it.Count)
	}
	return b.String()
}

// FetchItems is a FETCH item list, in the order written.
type FetchItems []FetchItem

// String renders the list as written on the wire, without parentheses.
func (l FetchItems) String() string {
	s := make([]string, len(l))
	for i, it := range l {
		s[i] = it.String()
	}
	return strings.Join(s, " ")
}

// Has reports whether the list holds an item of that name.
func (l FetchItems) Has(name string) bool {
	for _, it := range l {
		if it.Name == name {
			return true
		}
	}
	return false
}

// NamesMessageID reports whether fetching the list returns a message's
// Message-ID: ENVELOPE, or a whole header (or message) of the message
// itself, or its HEADER.FIELDS naming Message-ID (.NOT not excluding it).
func (l FetchItems) NamesMessageID() bool {
	for _, it := range l {
		if it.Name == "ENVELOPE" {
			return true
		}
		if !it.IsBody() || len(it.Part) > 0 || it.Count > 0 {
			continue
		}
		named := slices.ContainsFunc(it.Fields, func(f string) bool { return strings.EqualFold(f, "Message-ID") })
		switch it.Section {
		case "", "HEADER":
			return true
		case "HEADER.FIELDS":
			if named {
				return true
			}
		case "HEADER.FIELDS.NOT":
			if !named {
				return true
			}
		}
	}
	return false
}

// Reads reports whether fetching the list sets \Seen (a BODY[] without
// .PEEK does).
func (l FetchItems) Reads() bool { return l.Has("BODY") }

// simpleFetchItems are the atoms a client profile may list. RFC822,
// RFC822.HEADER and RFC822.TEXT are left out: they are BODY[],
// BODY.PEEK[HEADER] and BODY[TEXT] under older names.
var simpleFetchItems = []string{"UID", "FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODYSTRUCTURE", "MODSEQ"}

// maxFetchItems and maxHeaderFields bound a list.
const (
	maxFetchItems   = 32
	maxHeaderFields = 64
)

// ParseFetchItems parses a FETCH item list as IMAP writes it, without the
// outer parentheses: `UID RFC822.SIZE FLAGS BODY.PEEK[HEADER.FIELDS (From
// To)]`. Atoms are case-insensitive; field names keep their case.
func ParseFetchItems(s string) (FetchItems, error) {
	var items FetchItems
	rest := strings.TrimSpace(s)
	if rest == "" {
		return nil, fmt.Errorf("no items")
	}
	for rest != "" {
		if len(items) == maxFetchItems {
			return nil, fmt.Errorf("more than %d items", maxFetchItems)
		}
		var it FetchItem
		var err error
		it, rest, err = parseFetchItem(rest)
		if err != nil {
			return nil, err
		}
		for _, have := range items {
			if have.String() == it.String() {
				return nil, fmt.Errorf("%s listed twice", it)
			}
		}
		items = append(items, it)
		rest = strings.TrimLeft(rest, " ")
	}
	return items, nil
}

func parseFetchItem(s string) (FetchItem, string, error) {
	end := strings.IndexAny(s, " [")
	if end < 0 {
		end = len(s)
	}
	name := strings.ToUpper(s[:end])
	rest := s[end:]
	if name != "BODY" && name != "BODY.PEEK" {
		for _, ok := range simpleFetchItems {
			if name == ok {
				return FetchItem{Name: name}, rest, nil
			}
		}
		return FetchItem{}, "", fmt.Errorf("%q is not a FETCH item mailbench sends (one of %s, BODY[...], BODY.PEEK[...])", s[:end], strings.Join(simpleFetchItems, ", "))
	}
	if !strings.HasPrefix(rest, "[") {
		return FetchItem{}, "", fmt.Errorf("%s needs a section: %s[] for the whole message", name, name)
	}
	close := strings.IndexByte(rest, ']')
	if close < 0 {
		return FetchItem{}, "", fmt.Errorf("%s: no closing ]", name)
	}
	it := FetchItem{Name: name}
	if err := it.parseSection(rest[1:close]); err != nil {
		return FetchItem{}, "", fmt.Errorf("%s[%s]: %v", name, rest[1:close], err)
	}
	rest = rest[close+1:]
	if strings.HasPrefix(rest, "<") {
		gt := strings.IndexByte(rest, '>')
		if gt < 0 {
			return FetchItem{}, "", fmt.Errorf("%s: no closing > of the partial range", it)
		}
		off, cnt, ok := strings.Cut(rest[1:gt], ".")
		o, err1 := strconv.ParseInt(off, 10, 64)
		c, err2 := strconv.ParseInt(cnt, 10, 64)
		if !ok || err1 != nil || err2 != nil || o < 0 || c <= 0 {
			return FetchItem{}, "", fmt.Errorf("%s: the partial range must be <offset.count> with count > 0 (got <%s>)", it, rest[1:gt])
		}
		it.Offset, it.Count = o, c
		rest = rest[gt+1:]
	}
	if rest != "" && rest[0] != ' ' {
		return FetchItem{}, "", fmt.Errorf("%s: unexpected %q after it", it, rest)
	}
	return it, rest, nil
}

// parseSection parses what is between the brackets of BODY[...].
func (it *FetchItem) parseSection(s string) error {
	spec, fields, hasFields := strings.Cut(s, " ")
	// The part: numbers before the section text.
	for spec != "" {
		num, tail, _ := strings.Cut(spec, ".")
		n, err := strconv.Atoi(num)
		if err != nil {
			break
		}
		if n <= 0 {
			return fmt.Errorf("part numbers start at 1 (got %d)", n)
		}
		it.Part = append(it.Part, n)
		spec = tail
	}
	it.Section = strings.ToUpper(spec)
	switch it.Section {
	case "", "HEADER", "TEXT":
	case "MIME":
		if len(it.Part) == 0 {
			return fmt.Errorf("MIME needs a part (1.MIME)")
		}
	case "HEADER.FIELDS", "HEADER.FIELDS.NOT":
		if !hasFields {
			return fmt.Errorf("%s needs field names: %s (From Subject)", it.Section, it.Section)
		}
		fields = strings.TrimSpace(fields)
		if !strings.HasPrefix(fields, "(") || !strings.HasSuffix(fields, ")") {
			return fmt.Errorf("the field names go in parentheses: %s (From Subject)", it.Section)
		}
		it.Fields = strings.Fields(fields[1 : len(fields)-1])
		if len(it.Fields) == 0 {
			return fmt.Errorf("%s with no field names", it.Section)
		}
		if len(it.Fields) > maxHeaderFields {
			return fmt.Errorf("more than %d field names", maxHeaderFields)
		}
		for _, f := range it.Fields {
			for _, r := range f {
				if r <= ' ' || r >= 0x7f || r == ':' || r == '(' || r == ')' || r == '"' {
					return fmt.Errorf("%q is not a header field name", f)
				}
			}
		}
		return nil
	default:
		return fmt.Errorf("%q is not a section (HEADER, HEADER.FIELDS (...), HEADER.FIELDS.NOT (...), TEXT, MIME or a part number)", spec)
	}
	if hasFields {
		return fmt.Errorf("field names only go with HEADER.FIELDS")
	}
	return nil
}
