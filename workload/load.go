package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mailbench/mailbench/internal/tomlstrict"
	"github.com/mailbench/mailbench/measure"
)

// ConfigError is one problem of a config file, located at a line.
type ConfigError struct {
	File string // the name the config was loaded under
	Line int    // 1-based; 0 when the problem has no line (e.g. a missing key)
	Key  string // e.g. "load.sessions_per_hour"; "" for syntax errors
	Msg  string // never contains a password
}

// Error renders "file:line: key: msg", leaving out the parts that are empty.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.File != "" || e.Line > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors is every problem found in one config, sorted by line. Its
// Error lists one problem per line.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors, for errors.As.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Load reads the config file at path and returns it with defaults filled
// in, decoded strictly and validated; see ParseConfig. Errors name
// path:line. A path that is not a regular file (a directory, a FIFO, a
// device) or holds more than MaxConfigBytes is an error too; every error
// is a ConfigErrors. (It is not called LoadConfig: that name is the [load]
// table's type.)
func Load(path string) (*Config, error) {
	data, err := readInput(path, MaxConfigBytes)
	if err != nil {
		return nil, ConfigErrors{{File: path, Msg: err.Error()}}
	}
	return ParseConfig(path, data)
}

// ParseConfig decodes data, a TOML config named name (used in errors and as
// Config.File, against which users.file is resolved), over DefaultConfig and
// validates the result. It is strict: unknown keys (case-sensitive), wrong
// types, durations without units and invalid values are errors. The error,
// when not nil, is a ConfigErrors holding every problem found, each with its
// line. Data longer than MaxConfigBytes is an error. It doesn't perform
// I/O and doesn't read the environment.
func ParseConfig(name string, data []byte) (*Config, error) {
	if len(data) > MaxConfigBytes {
		return nil, ConfigErrors{{File: name, Msg: fmt.Sprintf("%d bytes is above the maximum of %d", len(data), MaxConfigBytes)}}
	}
	c := DefaultConfig()
	c.File = name
	src := strings.ToValidUTF8(string(data), "\uFFFD")
	lines, probs := tomlstrict.Decode(src, c, tomlstrict.Options{Secrets: map[string]string{"users.password": "the password"}, TypeName: configTypeName})
	var errs ConfigErrors
	for _, p := range probs {
		errs = append(errs, &ConfigError{File: name, Line: p.Line, Key: p.Key, Msg: p.Msg})
	}
	if len(errs) == 0 {
		errs = c.validate(name, lines)
	}
	if len(errs) > 0 {
		es := sortErrors(errs)
		if n := len(es); n > maxConfigErrors {
			es = append(es[:maxConfigErrors], &ConfigError{File: name, Msg: fmt.Sprintf("and %d more problems", n-maxConfigErrors)})
		}
		return nil, es
	}
	c.lines = lines
	return c, nil
}

// maxConfigErrors is how many problems of a config file ParseConfig lists;
// a note counts the rest.
const maxConfigErrors = 100

// Validate checks a Config built in code (no file: errors carry no lines).
// ParseConfig already validates what it returns. It doesn't perform I/O.
func (c *Config) Validate() error {
	if es := c.validate(c.File, nil); len(es) > 0 {
		return sortErrors(es)
	}
	return nil
}

func sortErrors(es ConfigErrors) ConfigErrors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Key < es[j].Key
	})
	// Drop exact duplicates (the same key reported twice).
	out := es[:0]
	for i, e := range es {
		if i > 0 && e.Error() == es[i-1].Error() {
			continue
		}
		out = append(out, e)
	}
	return out
}

// configTypeName names the config's own value types in "must be ..."
// messages.
func configTypeName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return `a duration string like "30s"`
	case reflect.TypeFor[ByteSize]():
		return `a size like "64KiB" or a number of bytes`
	}
	return ""
}

// suggestFunction names the known function closest to name, or says where
// the names are listed.
func suggestFunction(name string) string {
	best, bestDist := "", 6
	for _, f := range measure.AllFunctions {
		if d := tomlstrict.EditDistance(strings.ToLower(string(f)), strings.ToLower(name)); d < bestDist {
			best, bestDist = string(f), d
		}
	}
	if best == "" {
		return "want a function name of the SPECmail2008 table; docs/config.md lists them"
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// UnmarshalText parses a Go duration string ("30s", "1m30s", "250ms").
// A bare number is rejected: its unit would be a guess.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		f, _ := strconv.ParseFloat(s, 64)
		return fmt.Errorf("duration %s has no unit: write it as a string, e.g. \"%ss\"", s, strconv.FormatFloat(f, 'g', -1, 64))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: want e.g. \"30s\", \"1m30s\", \"250ms\"", s)
	}
	d.Duration = v
	return nil
}

// MarshalText renders the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// ByteSize units. Only binary units are accepted: "KB" is ambiguous
// (1000 or 1024) and is rejected with a hint.
const (
	KiB ByteSize = 1 << 10
	MiB ByteSize = 1 << 20
	GiB ByteSize = 1 << 30
)

// UnmarshalText parses a size: a number of bytes ("512", 512, "512B") or a
// whole number of KiB, MiB or GiB ("64KiB", "1 MiB"). Units are
// case-sensitive; KB, MB and GB are rejected as ambiguous.
func (s *ByteSize) UnmarshalText(b []byte) error {
	str := strings.TrimSpace(string(b))
	i := 0
	for i < len(str) && str[i] >= '0' && str[i] <= '9' {
		i++
	}
	num, unit := str[:i], strings.TrimSpace(str[i:])
	n, err := strconv.ParseInt(num, 10, 64)
	if num == "" || err != nil {
		return fmt.Errorf("invalid size %q: want a whole number of bytes or e.g. \"64KiB\", \"1MiB\"", str)
	}
	var mult ByteSize
	switch unit {
	case "", "B":
		mult = 1
	case "KiB":
		mult = KiB
	case "MiB":
		mult = MiB
	case "GiB":
		mult = GiB
	case "KB", "kB", "MB", "GB", "K", "k", "M", "G":
		return fmt.Errorf("invalid size %q: unit %s is ambiguous, write KiB, MiB or GiB (powers of 1024) or bytes", str, unit)
	default:
		return fmt.Errorf("invalid size %q: unknown unit %q (want B, KiB, MiB or GiB)", str, unit)
	}
	if n > int64(math.MaxInt64/mult) {
		return fmt.Errorf("invalid size %q: too large", str)
	}
	*s = ByteSize(n) * mult
	return nil
}

// MarshalText renders the size in the largest unit that divides it.
func (s ByteSize) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// String renders the size in the largest binary unit that divides it
// exactly ("64KiB", "1MiB", "1500B").
func (s ByteSize) String() string {
	switch {
	case s != 0 && s%GiB == 0:
		return strconv.FormatInt(int64(s/GiB), 10) + "GiB"
	case s != 0 && s%MiB == 0:
		return strconv.FormatInt(int64(s/MiB), 10) + "MiB"
	case s != 0 && s%KiB == 0:
		return strconv.FormatInt(int64(s/KiB), 10) + "KiB"
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// DefaultConfig returns the defaults every config file is decoded over: the
// mailbench enterprise profile of docs/config.md. The target has no address:
// a file must name one or set target.embedded. It doesn't perform I/O.
func DefaultConfig() *Config {
	st := func(w float64) SessionType { return SessionType{Weight: w, FetchCount: 20} }
	read := st(25)
	read.BodiesMin, read.BodiesMax = 1, 3
	return &Config{
		Name: "mailbench",
		Seed: 1,
		Target: TargetConfig{
			IMAP: Endpoint{TLS: "none", Auth: "login"},
			SMTP: Endpoint{TLS: "none", Auth: "none"},
		},
		Sink: SinkConfig{
			Enabled:         true,
			Listen:          "127.0.0.1:2526",
			TLS:             "none",
			MaxMessageBytes: 32 << 20,
			MaxRecipients:   100,
		},
		Users: UsersConfig{
			Count:        100,
			Pattern:      "user%d",
			LocalDomain:  "example.test",
			RemoteDomain: "remote.test",
		},
		Load: LoadConfig{
			SessionsPerUserHour: 4.8,
			MaxConcurrent:       1000,
			LateTolerance:       Duration{time.Second},
			OpTimeout:           Duration{30 * time.Second},
			ThinkTime:           Duration{2 * time.Second},
			InboundPerSession:   0.5,
		},
		Phases: PhasesConfig{
			Warmup:      Duration{time.Minute},
			Measurement: Duration{10 * time.Minute},
			Rampdown:    Duration{2 * time.Minute},
			Settle:      Duration{30 * time.Second},
		},
		Sessions: SessionsConfig{
			Check:   st(35),
			Read:    read,
			Cleanup: SessionType{Weight: 10},
			Folders: st(10),
			Send:    SessionType{Weight: 20},
		},
		Messages: MessagesConfig{
			Sizes: []SizeShare{
				{1 * KiB, 20}, {2 * KiB, 20}, {4 * KiB, 20}, {8 * KiB, 15}, {16 * KiB, 10},
				{32 * KiB, 7}, {64 * KiB, 5}, {256 * KiB, 2}, {1 * MiB, 1},
			},
			Recipients:  []RecipientShare{{1, 1, 70}, {2, 2, 15}, {3, 5, 10}, {6, 10, 5}},
			RemoteShare: 0.2,
		},
		Mailboxes: MailboxesConfig{
			InboxMessages:     50,
			Folders:           []string{"Archive", "Projects", "Projects/Alpha"},
			FolderMessagesMin: 10,
			FolderMessagesMax: 40,
			Sent:              "Sent",
			Drafts:            "Drafts",
			Trash:             "Trash",
			Delimiter:         "/",
		},
		Compliance: ComplianceConfig{
			Limit:             Duration{5 * time.Second},
			RequiredPercent:   95,
			DeliveryLimit:     Duration{60 * time.Second},
			DeliveryRequired:  95,
			MaxErrorPercent:   1,
			MaxDroppedPercent: 1,
			Functions:         map[string]FunctionLimit{},
		},
		Delivery: DeliveryConfig{WatchUsers: 16, WatchPoll: Duration{500 * time.Millisecond}},
	}
}

// MaxRecipients bounds messages.recipients[].max.
const MaxRecipients = 1000

// validator collects the problems of a decoded config.
type validator struct {
	file  string
	lines tomlstrict.Lines // nil for configs built in code
	errs  ConfigErrors
}

func (v *validator) add(p tomlstrict.Path, format string, args ...any) {
	v.errs = append(v.errs, &ConfigError{File: v.file, Line: v.lines.Locate(p), Key: p.String(), Msg: fmt.Sprintf(format, args...)})
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
	v := &validator{file: file, lines: lines}
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

// Password returns the users' password: the value of the environment
// variable users.password_env when that is set and non-empty, else
// users.password. It is an error when neither gives a password: a
// *ConfigError naming the config file and the key's line, and the
// variable, never a value. It reads the environment.
func (c *Config) Password() (string, error) {
	if env := c.Users.PasswordEnv; env != "" {
		if pw := os.Getenv(env); pw != "" {
			return pw, nil
		}
		if c.Users.Password != "" {
			return c.Users.Password, nil
		}
		return "", c.keyError(tomlstrict.PathOf("users", "password_env"), "environment variable %s is empty or unset and users.password is not set", env)
	}
	if c.Users.Password == "" {
		return "", c.keyError(tomlstrict.PathOf("users"), "no password: set users.password or users.password_env")
	}
	return c.Users.Password, nil
}

// keyError is a problem of the value at p, located in the config's file.
func (c *Config) keyError(p tomlstrict.Path, format string, args ...any) *ConfigError {
	return &ConfigError{File: c.File, Line: c.lines.Locate(p), Key: p.String(), Msg: fmt.Sprintf(format, args...)}
}

// TargetRate is the target arrival rate in sessions per hour:
// load.sessions_per_hour when set, else users.count ×
// load.sessions_per_user_hour. It doesn't perform I/O.
func (c *Config) TargetRate() float64 {
	if c.Load.SessionsPerHour > 0 {
		return c.Load.SessionsPerHour
	}
	return float64(c.Users.Count) * c.Load.SessionsPerUserHour
}

// Limit returns the compliance rule of fn: the response-time limit and the
// percentage of its operations that must be within it (the row passes when
// strictly more than required percent are).
// Delivery-time functions default to compliance.delivery_limit and
// delivery_required_percent, the others to compliance.limit and
// required_percent; compliance.functions."<fn>" overrides either field
// when non-zero. It doesn't perform I/O.
func (c *Config) Limit(fn measure.Function) (limit time.Duration, required float64) {
	cc := c.Compliance
	limit, required = cc.Limit.Duration, cc.RequiredPercent
	if fn == measure.DeliveryLocal || fn == measure.DeliveryRemote {
		limit, required = cc.DeliveryLimit.Duration, cc.DeliveryRequired
	}
	if o, ok := cc.Functions[string(fn)]; ok {
		if o.Limit.Duration > 0 {
			limit = o.Limit.Duration
		}
		if o.RequiredPercent > 0 {
			required = o.RequiredPercent
		}
	}
	return limit, required
}

// User is one simulated mail user.
type User struct {
	Name     string // the local part, e.g. "user7"
	Login    string // what IMAP LOGIN / SMTP AUTH use: Name or Address (users.login_with_domain)
	Password string // never printed
	Address  string // Name@local_domain
}

// String names the user without the password.
func (u User) String() string { return u.Login }

// LoadUsers returns the simulated users: users.count users named by
// users.pattern (user1..userN) sharing Password(), or the users of the CSV
// file users.file (resolved relative to the config file's directory), one
// "user,password" per record, an optional "user,password" header first,
// blank lines and lines starting with # ignored. A user given as
// name@domain must be in users.local_domain. A file that is not a regular
// file, a line longer than 8 KiB and more than MaxUsers users are errors.
// Errors are a *ConfigError or a ConfigErrors, naming the config's
// file:line of users.file when the file cannot be opened, and the users
// file's file:line of each problem in it; they never contain a password.
// It reads the file and the environment.
func (c *Config) LoadUsers() ([]User, error) {
	if c.Users.File == "" {
		pw, err := c.Password()
		if err != nil {
			return nil, err
		}
		users := make([]User, c.Users.Count)
		for i := range users {
			users[i] = c.newUser(fmt.Sprintf(c.Users.Pattern, i+1), pw)
		}
		return users, nil
	}
	path := c.Users.File
	if !filepath.IsAbs(path) && c.File != "" {
		path = filepath.Join(filepath.Dir(c.File), path)
	}
	f, err := openInput(path)
	if err != nil {
		return nil, c.keyError(tomlstrict.PathOf("users", "file"), "%s: %v", path, err)
	}
	defer f.Close()
	return c.parseUsers(path, f)
}

func (c *Config) newUser(name, pw string) User {
	u := User{Name: name, Password: pw, Address: name + "@" + c.Users.LocalDomain}
	u.Login = u.Name
	if c.Users.LoginWithDomain {
		u.Login = u.Address
	}
	return u
}

// maxUsersLine bounds one line of a users file: a longer line is an error,
// not a buffer that grows with the input.
const maxUsersLine = 8 << 10

// maxUserName bounds a user name of a users file (a mail address is at most
// 254 bytes).
const maxUserName = 255

// maxUsersErrors is how many problems of a users file are reported before
// parsing stops.
const maxUsersErrors = 20

// lineLimitReader passes r through, failing with a *lineTooLongError once
// a line exceeds max bytes. It counts lines to name the offending one.
type lineLimitReader struct {
	r    io.Reader
	max  int
	n    int // bytes of the current line so far
	line int // 1-based line of the next byte
	err  error
}

type lineTooLongError struct{ line, max int }

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("line %d is longer than %d bytes", e.line, e.max)
}

func (l *lineLimitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == '\n' {
			l.line++
			l.n = 0
			continue
		}
		if l.n++; l.n > l.max {
			l.err = &lineTooLongError{line: l.line, max: l.max}
			return i, l.err
		}
	}
	return n, err
}

// parseUsers reads the users CSV from r; name labels errors. Every problem
// is a *ConfigError naming name:line; it stops after maxUsersErrors of
// them, at a line longer than maxUsersLine and after MaxUsers users.
func (c *Config) parseUsers(name string, r io.Reader) ([]User, error) {
	cr := csv.NewReader(&lineLimitReader{r: r, max: maxUsersLine, line: 1})
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var (
		users []User
		errs  ConfigErrors
		seen  = map[string]int{}
	)
	bad := func(line int, format string, args ...any) {
		errs = append(errs, &ConfigError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	for first := true; len(errs) < maxUsersErrors; first = false {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var (
				pe  *csv.ParseError
				tle *lineTooLongError
			)
			switch {
			case errors.As(err, &tle):
				bad(tle.line, "line longer than %d bytes", tle.max)
			case errors.As(err, &pe):
				// The line the record starts on: an unterminated quote
				// is reported where it opens, not at the end of the file.
				if pe.Line != pe.StartLine {
					bad(pe.StartLine, "invalid CSV: %v (in the record running to line %d)", pe.Err, pe.Line)
				} else {
					bad(pe.Line, "invalid CSV: %v", pe.Err)
				}
				continue
			default:
				bad(0, "cannot read: %v", err)
			}
			break
		}
		// Only after a record without error: FieldPos panics otherwise.
		line, _ := cr.FieldPos(0)
		if first && len(rec) == 2 && strings.EqualFold(strings.TrimSpace(rec[0]), "user") && strings.EqualFold(strings.TrimSpace(rec[1]), "password") {
			continue
		}
		if len(rec) != 2 {
			bad(line, "want 2 fields user,password (got %d)", len(rec))
			continue
		}
		user, pw := strings.TrimSpace(rec[0]), rec[1]
		switch {
		case len(user) > maxUserName:
			bad(line, "user name longer than %d bytes", maxUserName)
			continue
		case strings.ContainsRune(user, ',') || strings.ContainsFunc(user, unicode.IsControl):
			// Not shown: a quote left open can pull the lines after it,
			// passwords included, into the name.
			bad(line, "invalid user name (not shown: it holds a comma or a control character such as a line break; is a quote left open?)")
			continue
		}
		local := user
		if at := strings.LastIndex(user, "@"); at >= 0 {
			if !strings.EqualFold(user[at+1:], c.Users.LocalDomain) {
				bad(line, "user %q is not in users.local_domain %q", user, c.Users.LocalDomain)
				continue
			}
			local = user[:at]
		}
		switch {
		case local == "" || strings.ContainsAny(local, " \"@") || strings.ContainsFunc(local, unicode.IsControl):
			bad(line, "invalid user name %q", user)
			continue
		case pw == "":
			bad(line, "user %q has an empty password", user)
			continue
		case strings.ContainsAny(pw, "\r\n\x00"):
			// Not a password anyone types: a CSV mistake, and one no
			// protocol carries as is.
			bad(line, "user %q: the password holds a line break or NUL (a quote left open?)", user)
			continue
		}
		if prev, dup := seen[strings.ToLower(local)]; dup {
			bad(line, "user %q already listed on line %d", user, prev)
			continue
		}
		if len(users) == MaxUsers {
			bad(line, "more than %d users (the maximum)", MaxUsers)
			break
		}
		seen[strings.ToLower(local)] = line
		users = append(users, c.newUser(local, pw))
	}
	if len(errs) > 0 {
		return nil, sortErrors(errs)
	}
	if len(users) == 0 {
		return nil, &ConfigError{File: name, Msg: "no users"}
	}
	return users, nil
}

// Where locates a dotted key of the config ("target.imap.address") for a
// message about it: "configs/x.toml:12: target.imap.address", or without
// the line when the key is not written in the file (a default), or without
// the file for a config built in code. It doesn't perform I/O.
func (c *Config) Where(key string) string {
	p := tomlstrict.PathOf(strings.Split(key, ".")...)
	switch line := c.lines.Locate(p); {
	case c.File == "":
		return key
	case line > 0:
		return fmt.Sprintf("%s:%d: %s", c.File, line, key)
	}
	return c.File + ": " + key + " (not set: its default)"
}
