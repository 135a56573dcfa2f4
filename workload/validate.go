package workload

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
)

// validator collects the problems of a decoded config.
type validator struct {
	file       string
	lines      tomlstrict.Lines  // nil for configs built in code
	overridden map[string]string // keys Overrides set, and by what
	errs       ConfigErrors
}

func (v *validator) add(p tomlstrict.Path, format string, args ...any) {
	v.errs = append(v.errs, locate(v.file, v.lines, v.overridden, p, fmt.Sprintf(format, args...)))
}

// locate is the ConfigError of a problem with the value at p: at its line
// of file, or named by the override that set it.
func locate(file string, lines tomlstrict.Lines, overridden map[string]string, p tomlstrict.Path, msg string) *ConfigError {
	if src, ok := overridden[p.String()]; ok {
		return &ConfigError{File: src, Key: p.String(), Msg: msg}
	}
	return &ConfigError{File: file, Line: lines.Locate(p), Key: p.String(), Msg: msg}
}

// written reports whether the file sets p (false for configs built in code).
func (v *validator) written(p tomlstrict.Path) bool { return v.lines.Has(p) }

func (v *validator) positiveInt(p tomlstrict.Path, n int) {
	if n <= 0 {
		v.add(p, "must be > 0 (got %d)", n)
	}
}

func (v *validator) nonNegativeInt(p tomlstrict.Path, n int) {
	if n < 0 {
		v.add(p, "must be >= 0 (got %d)", n)
	}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// fmtBound renders a number compared with a maximum: without an exponent
// up to 10^16, so that 1e9 reads 1000000000.
func fmtBound(f float64) string {
	if math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmtFloat(f)
}

// atMost checks n <= limit, naming the limit. It reports whether n is
// within it.
func (v *validator) atMost(p tomlstrict.Path, n, limit int) bool {
	if n > limit {
		v.add(p, "%d is above the maximum of %d", n, limit)
		return false
	}
	return true
}

// atMostFloat is atMost for a number already known to be finite.
func (v *validator) atMostFloat(p tomlstrict.Path, f, limit float64) bool {
	if f > limit {
		v.add(p, "%s is above the maximum of %s", fmtBound(f), fmtBound(limit))
		return false
	}
	return true
}

// atMostDuration is atMost for a duration.
func (v *validator) atMostDuration(p tomlstrict.Path, d Duration, limit time.Duration) {
	if d.Duration > limit {
		v.add(p, "%s is above the maximum of %s", d.Duration, limit)
	}
}

// number checks that f is finite and within [lo, hi]; an open bound is
// excluded from the range.
func (v *validator) number(p tomlstrict.Path, f, lo, hi float64, loOpen, hiOpen bool) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		v.add(p, "must be a finite number (got %s)", fmtFloat(f))
		return false
	}
	switch {
	case loOpen && f <= lo, !loOpen && f < lo:
		op := ">="
		if loOpen {
			op = ">"
		}
		v.add(p, "must be %s %s (got %s)", op, fmtFloat(lo), fmtFloat(f))
		return false
	case hiOpen && f >= hi, !hiOpen && f > hi:
		op := "<="
		if hiOpen {
			op = "<"
		}
		v.add(p, "must be %s %s (got %s)", op, fmtFloat(hi), fmtFloat(f))
		return false
	}
	return true
}

func (v *validator) duration(p tomlstrict.Path, d Duration, positive bool) {
	switch {
	case positive && d.Duration <= 0:
		v.add(p, "must be > 0 (got %s)", d.Duration)
	case d.Duration < 0:
		v.add(p, "must be >= 0 (got %s)", d.Duration)
	}
}

func (v *validator) oneOf(p tomlstrict.Path, s string, allowed ...string) {
	if !slices.Contains(allowed, s) {
		v.add(p, "must be one of %s (got %q)", strings.Join(quoteAll(allowed), ", "), s)
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// hostPort checks a host:port address; a port of 0 is allowed when zeroOK
// (listen on any free port).
func (v *validator) hostPort(p tomlstrict.Path, addr string, zeroOK bool) {
	if msg := checkHostPort(addr, zeroOK); msg != "" {
		v.add(p, "%s (got %q)", msg, addr)
	}
}

func checkHostPort(addr string, zeroOK bool) string {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return "must be host:port"
	}
	if host == "" {
		return "must be host:port with a host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || (n == 0 && !zeroOK) || port != strconv.Itoa(n) {
		return "must be host:port with a port in 1-65535"
	}
	if strings.ContainsAny(host, " \t/@") {
		return "must be host:port with a valid host"
	}
	return ""
}

// splitHostPort is net.SplitHostPort without the import of net's resolver.
func splitHostPort(addr string) (host, port string, err error) {
	errBad := errors.New("bad address")
	if strings.HasPrefix(addr, "[") {
		end := strings.Index(addr, "]")
		if end < 0 || !strings.HasPrefix(addr[end+1:], ":") {
			return "", "", errBad
		}
		return addr[1:end], addr[end+2:], nil
	}
	i := strings.LastIndex(addr, ":")
	if i < 0 || strings.Contains(addr[:i], ":") {
		return "", "", errBad
	}
	return addr[:i], addr[i+1:], nil
}

var patternVerbRE = regexp.MustCompile(`%[-+ 0]*[0-9]*d`)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validDomain(d string) bool {
	if d == "" || len(d) > 253 || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") || strings.Contains(d, "..") {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// sessionTypes lists the session types in report order, with their config.
func (c *Config) sessionTypes() []struct {
	Name string
	T    *SessionType
} {
	return c.Sessions.types()
}

// types lists the session types in report order, with their config.
func (ss *SessionsConfig) types() []struct {
	Name string
	T    *SessionType
} {
	return []struct {
		Name string
		T    *SessionType
	}{
		{"check", &ss.Check}, {"read", &ss.Read}, {"cleanup", &ss.Cleanup},
		{"folders", &ss.Folders}, {"send", &ss.Send},
	}
}

// usesFetchCount and usesBodies say which session types read fetch_count
// and bodies_min/bodies_max.
func usesFetchCount(name string) bool { return name == "check" || name == "read" || name == "folders" }
func usesBodies(name string) bool     { return name == "read" }

func (c *Config) validate(file string, lines tomlstrict.Lines) ConfigErrors {
	v := &validator{file: file, lines: lines, overridden: c.overridden}
	c.Target.validate(v)
	c.Sink.validate(v)
	c.Users.validate(v)
	ratesOK := c.Load.validate(v)
	c.Phases.validate(v)
	c.Delivery.validate(v)
	c.Sessions.validate(v)
	c.Messages.validate(v)
	c.Mailboxes.validate(v)
	c.Compliance.validate(v)
	c.Server.validate(v)
	c.validatePopulation(v)
	v.validateDisclosure(c.Disclosure)

	// What one section needs of another.
	u, l := c.Users, c.Load
	if u.File != "" && l.SessionsPerHour == 0 {
		v.add(tomlstrict.PathOf("load", "sessions_per_hour"), "required with users.file (the user count is not known before the file is read)")
	}
	if ratesOK && l.SessionsPerHour == 0 && u.File == "" && u.Count > 0 && u.Count <= MaxUsers {
		if r := c.TargetRate(); r > MaxSessionsPerHour {
			v.add(tomlstrict.PathOf("load", "sessions_per_user_hour"), "users.count × sessions_per_user_hour = %s sessions/hour is above the maximum of %s (set load.sessions_per_hour or fewer users)", fmtBound(r), fmtBound(MaxSessionsPerHour))
		}
	}
	// A ramp-down shorter than an operation's deadline cuts operations that
	// the server would still have answered in time; mailbench's own cuts
	// must not look like the server's failures.
	if rd, ot := c.Phases.Rampdown.Duration, l.OpTimeout.Duration; ot > 0 && rd >= 0 && rd < ot {
		p := tomlstrict.PathOf("phases", "rampdown")
		if !v.written(p) && v.written(tomlstrict.PathOf("load", "op_timeout")) {
			p = tomlstrict.PathOf("load", "op_timeout")
		}
		v.add(p, "ramp-down %s is shorter than load.op_timeout %s: phases.rampdown must be >= load.op_timeout, so that running operations get their whole deadline before the run cuts them", rd, ot)
	}

	return v.errs
}

// MaxRecipients bounds messages.recipients[].max.
const MaxRecipients = 1000
