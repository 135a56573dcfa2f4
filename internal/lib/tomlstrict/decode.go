// Package tomlstrict decodes TOML strictly: every unknown key and every
// value of the wrong type is an error naming its file and line, all of
// them at once, and the lines of the keys stay known for later checks.
package tomlstrict

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Problem is one problem of a document: its line (1-based; 0 when it has
// none), the rendered path of its key ("" for a syntax error) and what is
// wrong. Msg never quotes a secret's value.
type Problem struct {
	Line int
	Key  string
	Msg  string
}

// Options are what Decode needs to know of the types it decodes into.
type Options struct {
	// Secrets maps rendered key paths ("users.password") whose values are
	// never echoed to what they hold ("the password"): a syntax error on
	// their line is not quoted, and a wrong type only says what is wanted.
	Secrets map[string]string
	// TypeName, when set, names a type in "must be ..." messages ("a
	// duration string like \"30s\""); "" falls back to the kind's name.
	TypeName func(reflect.Type) string
}

// Decode checks src's shape (CheckShape), parses it as TOML and decodes it
// into v, a pointer to a struct that holds the defaults, one key at a time
// through the fields' toml tags, so that every unknown key (with the
// nearest known one as a hint) and every wrong type is reported with its
// line, not only the first; a value that fails to decode leaves its
// default. A struct whose pointer has UnmarshalText is decoded from one
// value. The lines of src's keys are returned for the caller's own
// checks. Decode doesn't perform I/O.
func Decode(src string, v any, o Options) (Lines, []Problem) {
	if line, msg := CheckShape(src); msg != "" {
		return Lines{}, []Problem{{Line: line, Msg: msg}}
	}
	var raw map[string]toml.Primitive
	md, err := toml.Decode(src, &raw)
	lines := ScanLines([]byte(src))
	if err != nil {
		return lines, []Problem{syntaxError(src, lines, o.Secrets, err)}
	}
	d := &decoder{md: &md, lines: lines, opts: o, unknown: map[string]bool{}}
	d.table(raw, reflect.ValueOf(v).Elem(), nil)
	// Safety net: anything the walk above did not consume is unknown too.
	for _, k := range md.Undecoded() {
		if !d.underUnknown(k) {
			d.add(PathOf(k...), "unknown key")
		}
	}
	return lines, d.probs
}

var tomlLineRE = regexp.MustCompile(`^toml: (?:line (\d+) )?(?:\(last key "[^"]*"\))?:? ?`)

// syntaxError turns a toml decode error into a Problem. A syntax error on
// a secret's line is not quoted: it could echo the secret.
func syntaxError(src string, lines Lines, secrets map[string]string, err error) Problem {
	var pr Problem
	var pe toml.ParseError
	if errors.As(err, &pe) {
		pr.Line = pe.Position.Line
		// The reported line is one too far when the error is at a newline
		// (e.g. an unclosed "[users"); the byte offset is exact.
		if st := pe.Position.Start; st >= 0 && st <= len(src) {
			pr.Line = 1 + strings.Count(src[:st], "\n")
		}
		pr.Msg = strings.ReplaceAll(pe.Message, `'\n'`, "end of line")
	} else {
		msg := err.Error()
		if m := tomlLineRE.FindStringSubmatch(msg); m != nil {
			pr.Line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		}
		pr.Msg = msg
	}
	for key, what := range secrets {
		if sl, ok := lines[key]; ok && sl == pr.Line {
			pr.Msg = "invalid syntax (the line is not shown: it holds " + what + ")"
		}
	}
	pr.Msg = "syntax error: " + pr.Msg
	return pr
}

// decoder walks the document alongside the Config struct, decoding one key
// at a time so that every wrong type and unknown key is reported, not only
// the first.
type decoder struct {
	md      *toml.MetaData
	lines   Lines
	opts    Options
	probs   []Problem
	unknown map[string]bool // rendered paths reported as unknown
}

func (d *decoder) add(p Path, format string, args ...any) {
	d.probs = append(d.probs, Problem{Line: d.lines.Locate(p), Key: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// underUnknown reports whether key k or one of its ancestors was already
// reported as unknown (or belongs to a value that failed to decode).
func (d *decoder) underUnknown(k toml.Key) bool {
	for n := 1; n <= len(k); n++ {
		if d.unknown[toml.Key(k[:n]).String()] {
			return true
		}
	}
	return false
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// isTable reports whether values of t are decoded key by key: structs,
// except those that decode themselves from a string (UnmarshalText).
func isTable(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshaler)
}

// table decodes raw (the keys of one TOML table) into the struct rv.
func (d *decoder) table(raw map[string]toml.Primitive, rv reflect.Value, p Path) {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		kp := p.With(k)
		f, ok := fieldByTag(rv, k)
		if !ok {
			d.unknown[tomlKey(kp)] = true
			if hint := suggestKey(rv.Type(), k); hint != "" {
				d.add(kp, "unknown key (did you mean %q?)", hint)
			} else {
				d.add(kp, "unknown key")
			}
			continue
		}
		d.value(raw[k], f, kp)
	}
}

// suggestKey returns the field tag of struct type t closest to the unknown
// key k (same letters in another case, or at most two edits apart), or "".
func suggestKey(t reflect.Type, k string) string {
	best, bestDist := "", 3
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("toml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		if strings.EqualFold(tag, k) {
			return tag
		}
		if d := EditDistance(strings.ToLower(tag), strings.ToLower(k)); d < bestDist && d < len(tag) {
			best, bestDist = tag, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b (bytes).
func EditDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return 256
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// tomlKey renders p as toml.Key.String does (no array indexes).
func tomlKey(p Path) string {
	var k toml.Key
	for _, e := range p {
		if !e.isIndex {
			k = append(k, e.key)
		}
	}
	return k.String()
}

func fieldByTag(rv reflect.Value, key string) (reflect.Value, bool) {
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("toml"), ",")[0]
		if tag == key && tag != "-" && t.Field(i).IsExported() {
			return rv.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// value decodes one primitive into rv.
func (d *decoder) value(prim toml.Primitive, rv reflect.Value, p Path) {
	t := rv.Type()
	switch {
	case isTable(t):
		var raw map[string]toml.Primitive
		if err := d.md.PrimitiveDecode(prim, &raw); err != nil {
			d.fail(p, err, "a table")
			return
		}
		d.table(raw, rv, p)
	case t.Kind() == reflect.Map:
		var raw map[string]toml.Primitive
		if err := d.md.PrimitiveDecode(prim, &raw); err != nil {
			d.fail(p, err, "a table")
			return
		}
		if rv.IsNil() {
			rv.Set(reflect.MakeMap(t))
		}
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ev := reflect.New(t.Elem()).Elem()
			d.value(raw[k], ev, p.With(k))
			rv.SetMapIndex(reflect.ValueOf(k), ev)
		}
	case t.Kind() == reflect.Slice && isTable(t.Elem()):
		var raw []toml.Primitive
		if err := d.md.PrimitiveDecode(prim, &raw); err != nil {
			d.fail(p, err, "an array of tables")
			return
		}
		s := reflect.MakeSlice(t, len(raw), len(raw))
		for i := range raw {
			d.value(raw[i], s.Index(i), p.At(i))
		}
		rv.Set(s)
	default:
		// A leaf: decode into a fresh value so a failure leaves the default.
		nv := reflect.New(t)
		if err := d.md.PrimitiveDecode(prim, nv.Interface()); err != nil {
			d.fail(p, err, d.typeName(t))
			return
		}
		rv.Set(nv.Elem())
	}
}

var badTypeRE = regexp.MustCompile(`incompatible types: TOML value has type (\S+); destination has type`)

// fail records a decode error of the value at p, in the file:line form.
func (d *decoder) fail(p Path, err error, want string) {
	d.unknown[tomlKey(p)] = true // its keys are not "unknown", they failed
	var pe toml.ParseError
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Message
	} else if m := tomlLineRE.FindStringSubmatch(msg); m != nil {
		msg = msg[len(m[0]):]
	}
	if m := badTypeRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("must be %s (got %s)", want, tomlTypeName(m[1]))
	} else if strings.Contains(msg, "expected table but found") {
		msg = fmt.Sprintf("must be %s (got %s)", want, tomlTypeName(msg[strings.LastIndex(msg, " ")+1:]))
	}
	if _, ok := d.opts.Secrets[p.String()]; ok {
		msg = "must be a string" // never echo anything about a secret's value
	}
	d.add(p, "%s", msg)
}

func (d *decoder) typeName(t reflect.Type) string {
	if d.opts.TypeName != nil {
		if n := d.opts.TypeName(t); n != "" {
			return n
		}
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(d.typeName(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}

func tomlTypeName(goType string) string {
	switch goType {
	case "int64":
		return "integer"
	case "float64":
		return "float"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "time.Time":
		return "datetime"
	}
	if strings.HasPrefix(goType, "map[") {
		return "table"
	}
	if strings.HasPrefix(goType, "[]") {
		return "array"
	}
	return goType
}
