package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
)

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
//
// A users file is read once per loaded config (and its copies): later
// calls with the same [users] settings return the users first read, the
// same slice, which callers must not modify. A run's check, namespace
// probe and sessions so see the same users, however the file changes.
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
	if users, ok := c.usersRead.get(c.Users, path); ok {
		return users, nil
	}
	f, err := openInput(path)
	if err != nil {
		return nil, c.keyError(tomlstrict.PathOf("users", "file"), "%s: %v", path, err)
	}
	defer f.Close()
	users, err := c.parseUsers(path, f)
	if err == nil {
		c.usersRead.put(c.Users, path, users)
	}
	return users, err
}

// usersRead is a users file as LoadUsers read it, and the settings it
// was read with. Its methods are safe for concurrent use, and on nil (a
// config built in code reads its file every time).
type usersRead struct {
	mu    sync.Mutex
	of    UsersConfig
	path  string
	users []User
}

func (r *usersRead) get(of UsersConfig, path string) ([]User, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users, r.users != nil && r.of == of && r.path == path
}

func (r *usersRead) put(of UsersConfig, path string, users []User) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.of, r.path, r.users = of, path, users
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
