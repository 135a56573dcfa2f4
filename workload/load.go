package workload

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
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
// in, decoded strictly, with o laid over it, and validated once; see
// ParseConfig. Errors name path:line, or the override. A path that is not
// a regular file (a directory, a FIFO, a device) or holds more than
// MaxConfigBytes is an error too; every error is a ConfigErrors. (It is
// not called LoadConfig: that name is the [load] table's type.)
func Load(path string, o Overrides) (*Config, error) {
	data, err := readInput(path, MaxConfigBytes)
	if err != nil {
		return nil, ConfigErrors{{File: path, Msg: err.Error()}}
	}
	return parse(path, data, o)
}

// ParseConfig decodes data, a TOML config named name (used in errors and as
// Config.File, against which users.file is resolved), over DefaultConfig and
// validates the result. It is strict: unknown keys (case-sensitive), wrong
// types, durations without units and invalid values are errors. The error,
// when not nil, is a ConfigErrors holding every problem found, each with its
// line. Data longer than MaxConfigBytes is an error. It doesn't perform
// I/O and doesn't read the environment.
func ParseConfig(name string, data []byte) (*Config, error) {
	return parse(name, data, Overrides{})
}

// parse is ParseConfig with o laid over the decoded values before the
// validation.
func parse(name string, data []byte, o Overrides) (*Config, error) {
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
		errs = o.apply(c)
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
	c.usersRead = &usersRead{}
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
	return locate(c.File, c.lines, c.overridden, p, fmt.Sprintf(format, args...))
}

// TargetRate is the target arrival rate in sessions per hour:
// load.sessions_per_hour when set, else users.count ×
// load.sessions_per_user_hour. It doesn't perform I/O.
func (c *Config) TargetRate() float64 {
	if c.HasPopulation() {
		return float64(c.SPECUsers()) * c.Load.SessionsPerUserHour
	}
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
	if measure.IsDelivery(fn) {
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

// Where locates a dotted key of the config ("target.imap.address") for a
// message about it: "configs/x.toml:12: target.imap.address", or without
// the line when the key is not written in the file (a default), or without
// the file for a config built in code, or the override that set it
// ("--rate"). It doesn't perform I/O.
func (c *Config) Where(key string) string {
	if src, ok := c.overridden[key]; ok {
		return src
	}
	p := tomlstrict.PathOf(strings.Split(key, ".")...)
	switch line := c.lines.Locate(p); {
	case c.File == "":
		return key
	case line > 0:
		return fmt.Sprintf("%s:%d: %s", c.File, line, key)
	}
	return c.File + ": " + key + " (not set: its default)"
}

// StreamMaxConcurrent is the concurrency cap of each mail stream (the
// inbound mail, the population's sent mail): a quarter of
// load.max_concurrent_sessions, at least 1. Its drops are reported as the
// generator's cap. It doesn't perform I/O.
func (c *Config) StreamMaxConcurrent() int {
	return max(c.Load.MaxConcurrent/4, 1)
}
