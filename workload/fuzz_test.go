package workload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
)

// Native fuzz targets of the parsers of hostile input: the TOML config,
// its line scanner and the users CSV. Run one with e.g.
//
//	go test ./workload -run XXX -fuzz FuzzParseUsers -fuzztime 60s
//
// Inputs that once failed are kept under testdata/fuzz/<target> and run
// with every `go test`.

// noHang panics when the test is still running after d: a parser that
// loops is a bug the fuzzer must report, not wait for.
func noHang(d time.Duration, data any) (done func()) {
	ch := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-time.After(d):
			panic(fmt.Sprintf("HANG on %q", data))
		}
	}()
	return func() { close(ch) }
}

// checkConfigErrors checks the shape of an error of ParseConfig or
// LoadUsers: ConfigErrors or a *ConfigError of file name, each with a
// message, and a line within the input of n lines.
func checkConfigErrors(t *testing.T, err error, name string, n int) {
	t.Helper()
	if err.Error() == "" {
		t.Fatal("empty error")
	}
	var ces ConfigErrors
	var ce *ConfigError
	switch {
	case errors.As(err, &ces):
		if len(ces) == 0 {
			t.Fatal("ConfigErrors without an error")
		}
	case errors.As(err, &ce):
		ces = ConfigErrors{ce}
	default:
		t.Fatalf("error is %T, want ConfigErrors: %v", err, err)
	}
	for _, e := range ces {
		if e.File != name || e.Msg == "" || e.Line < 0 || e.Line > n {
			t.Fatalf("malformed error %#v (input of %d lines)", e, n)
		}
	}
}

// secretLike reports whether pw can stand for a password in a leak check:
// long enough not to occur by chance, in none of the other parts of the
// input, and of letters and digits only (so that swapping it for another
// such string changes nothing but the password).
func secretLike(pw string, others ...string) bool {
	if len(pw) < 8 || len(pw) > 64 {
		return false
	}
	for i := 0; i < len(pw); i++ {
		if c := pw[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	for _, o := range others {
		if strings.Contains(o, pw) || strings.Contains(o, other(pw)) {
			return false
		}
	}
	return true
}

// other returns a password of pw's length and class that differs from pw
// in every byte.
func other(pw string) string {
	b := []byte(pw)
	for i, c := range b {
		switch {
		case c == 'z':
			b[i] = 'a'
		case c == 'Z':
			b[i] = 'A'
		case c == '9':
			b[i] = '0'
		default:
			b[i] = c + 1
		}
	}
	return string(b)
}

// noLeak fails when the error of the input with password pw names pw more
// often than the error of the same input with another password does: the
// difference is the password, echoed.
func noLeak(t *testing.T, pw string, parse func(pw string) error) {
	t.Helper()
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	with, without := msg(parse(pw)), msg(parse(other(pw)))
	if strings.Count(with, pw) > strings.Count(without, pw) {
		t.Fatalf("error shows the password %q:\n%s", pw, with)
	}
}

// FuzzParseConfig checks that no input makes ParseConfig panic or hang,
// that every error has a message, the file name and a line within the
// input, and that an accepted config is valid and plans.
func FuzzParseConfig(f *testing.F) {
	for _, g := range []string{"../configs/*.toml", "testdata/config/bad/*.toml", "testdata/config/good/*.toml"} {
		files, _ := filepath.Glob(g)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("a = [{b = [{c = 1}]}]\n[[x.y]]\n[x]\n"))
	f.Add([]byte("[users]\ncount = 9223372036854775807\n[load]\nsessions_per_user_hour = 1e308\n"))
	f.Add([]byte("[phases]\nmeasurement = \"2562047h47m16.854775807s\"\nwarmup = \"2562047h\"\n"))
	f.Add([]byte("[[messages.sizes]]\nsize = \"8589934591GiB\"\nshare = 100\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		defer noHang(3*time.Second, data)()
		c, err := ParseConfig("f.toml", data)
		if err != nil {
			if c != nil {
				t.Fatal("config and error")
			}
			checkConfigErrors(t, err, "f.toml", strings.Count(string(data), "\n")+1)
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted config does not validate: %v", err)
		}
		if r := c.TargetRate(); !(r > 0 && r <= MaxSessionsPerHour) {
			t.Fatalf("accepted config with a target rate of %v", r)
		}
		if _, err := NewPlan(c); err != nil {
			t.Fatalf("NewPlan of accepted config: %v", err)
		}
	})
}

// passwordForms are ways to write users.password, right or wrong, with
// %s for the password.
var passwordForms = []string{
	"[users]\npassword = \"%s\"\n",
	"[users]\npassword = '%s'\n",
	"[users]\npassword = %s\n",
	"[users]\npassword = \"%s\n",
	"[users]\npassword = \"\"\"%s\"\"\"\n",
	"[users]\npassword = '''%s\n",
	"[users]\npassword = [\"%s\"]\n",
	"[users]\npassword = { v = \"%s\" }\n",
	"[users]\npassword = \"%s\" x\n",
	"[users]\npassword = \"%s\"\npassword = \"%s\"\n",
	"users.password = \"%s\"\n",
	"users.password = %s.x\n",
	"[users.password]\n%s = 1\n",
	"[users]\npassword = \"%s\"\ncount = -1\n",
}

// FuzzConfigPassword checks that no error of ParseConfig shows the
// password, however its line is written, whatever follows it.
func FuzzConfigPassword(f *testing.F) {
	for i := range passwordForms {
		f.Add(uint8(i), "Zq9hunter2secret", []byte("[target]\nembedded = true\n"))
	}
	f.Add(uint8(0), "Zq9hunter2secret", []byte("[users]\npassword_env = 3\n[load]\nx = 1\n"))
	f.Add(uint8(2), "Zq9hunter2secret", []byte("x = \"\"\"\n"))
	f.Fuzz(func(t *testing.T, form uint8, pw string, rest []byte) {
		format := passwordForms[int(form)%len(passwordForms)]
		src := func(pw string) string { return strings.ReplaceAll(format, "%s", pw) + string(rest) }
		parse := func(pw string) error {
			_, err := ParseConfig("f.toml", []byte(src(pw)))
			return err
		}
		defer noHang(3*time.Second, rest)()
		if err := parse(pw); err != nil {
			checkConfigErrors(t, err, "f.toml", strings.Count(src(pw), "\n")+1)
		}
		if secretLike(pw, format, string(rest)) {
			noLeak(t, pw, parse)
		}
	})
}

// FuzzKeyLines checks that the line scanner never panics or reports a line
// outside the input.
func FuzzKeyLines(f *testing.F) {
	f.Add([]byte("[a.b]\nc = { d = [1, {e = 2}] }\n[[f]]\n'g'.\"h\" = '''x\n'''\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := strings.Count(string(data), "\n") + 1
		for k, l := range tomlstrict.ScanLines(data) {
			if l < 1 || l > n {
				t.Fatalf("key %q at line %d of %d", k, l, n)
			}
		}
	})
}

// FuzzParseUsers checks that no users file makes the parser panic or hang,
// that every error has a message and a line within the file, that the
// users it accepts are well formed and distinct, and that no error shows
// the password of the record "alice,<pw>" put between two fuzzed parts.
func FuzzParseUsers(f *testing.F) {
	seeds := []struct{ before, pw, after string }{
		{"user,password\n", "sekA1234", "bob,sekB\n"},
		{"", "sekA1234", ""},
		{"\"", "sekA1234", ""},
		{"a\"b,c\n", "sekA1234", "\"x\n"},
		{"\"bob,sekB", "sekA1234", "\",x\n"},
		{"# comment\n\n bob , sekB\r\n", "sekA1234", "carol@example.test,sekC\ncarol@other.test,x\n"},
		{"bob,\"se\"\"kB\"\n", "sekA1234", "alice,dup\n"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.before), s.pw, []byte(s.after))
	}
	c := DefaultConfig()
	f.Fuzz(func(t *testing.T, before []byte, pw string, after []byte) {
		input := func(pw string) string { return string(before) + "\nalice," + pw + "\n" + string(after) }
		in := input(pw)
		defer noHang(3*time.Second, in)()
		users, err := c.parseUsers("u.csv", strings.NewReader(in))
		if err != nil {
			if users != nil {
				t.Fatal("users and error")
			}
			checkConfigErrors(t, err, "u.csv", strings.Count(in, "\n")+1)
		} else {
			if len(users) == 0 {
				t.Fatal("no users and no error")
			}
			seen := map[string]bool{}
			for _, u := range users {
				name := strings.ToLower(u.Name)
				if u.Name == "" || u.Password == "" || seen[name] || strings.ContainsAny(u.Name, " ,@\"\n\r") || u.Address != u.Name+"@example.test" {
					t.Fatalf("malformed or repeated user %+v", u)
				}
				seen[name] = true
			}
		}
		if secretLike(pw, string(before), string(after)) {
			noLeak(t, pw, func(pw string) error {
				_, err := c.parseUsers("u.csv", strings.NewReader(input(pw)))
				return err
			})
		}
	})
}
