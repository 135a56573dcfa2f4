package workload

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

var update = flag.Bool("update", false, "rewrite the golden files (.err, .txt) from the current output")

// TestBadConfigs loads every testdata/config/bad/*.toml and compares the
// whole error text with the .err file next to it.
func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/config/bad/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Fatalf("only %d bad configs", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".toml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseConfig(name, data)
			if err == nil {
				t.Fatalf("ParseConfig accepted %s: %+v", name, c)
			}
			if c != nil {
				t.Errorf("ParseConfig returned a config with an error")
			}
			var ces ConfigErrors
			if !errors.As(err, &ces) {
				t.Fatalf("error is %T, want ConfigErrors", err)
			}
			for _, e := range ces {
				if e.Line <= 0 && !strings.HasPrefix(e.Msg, "required") {
					t.Errorf("error without a line: %v", e)
				}
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".toml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("error text:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestShippedConfigs loads every config under configs/ and the good test
// configs, and checks the shipped ones against what their comments promise.
func TestShippedConfigs(t *testing.T) {
	shipped, _ := filepath.Glob("../configs/*.toml")
	good, _ := filepath.Glob("testdata/config/good/*.toml")
	if len(shipped) < 3 {
		t.Fatalf("found %d shipped configs, want at least 3", len(shipped))
	}
	loaded := map[string]*Config{}
	for _, f := range append(shipped, good...) {
		c, err := Load(f, Overrides{})
		if err != nil {
			t.Errorf("%s:\n%v", f, err)
			continue
		}
		if c.File != f {
			t.Errorf("File = %q, want %q", c.File, f)
		}
		loaded[filepath.Base(f)] = c
	}
	type want struct {
		users     int
		rate      float64
		embedded  bool
		total     time.Duration
		maxSize   ByteSize
		opTimeout time.Duration
	}
	for name, w := range map[string]want{
		"quick.toml":           {20, 14400, true, 65 * time.Second, 64 * KiB, 10 * time.Second},
		"enterprise.toml":      {2500, 12000, false, 40*time.Minute + 30*time.Second, MiB, 30 * time.Second},
		"dovecot-postfix.toml": {100, 7200, false, 115 * time.Second, MiB, 30 * time.Second},
	} {
		c := loaded[name]
		if c == nil {
			t.Errorf("%s did not load", name)
			continue
		}
		p := c.Phases
		var maxSize ByteSize
		for _, s := range c.Messages.Sizes {
			maxSize = max(maxSize, s.Size)
		}
		got := want{c.Users.Count, c.TargetRate(), c.Target.Embedded,
			p.Warmup.Duration + p.Measurement.Duration + p.Rampdown.Duration + p.Settle.Duration, maxSize, c.Load.OpTimeout.Duration}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", name, got, w)
		}
	}
	// The enterprise file spells out the defaults: apart from what it must
	// set, it loads to DefaultConfig.
	if c := loaded["enterprise.toml"]; c != nil {
		d := DefaultConfig()
		d.Name, d.File = c.Name, c.File
		d.Target.IMAP.Address, d.Target.SMTP.Address = c.Target.IMAP.Address, c.Target.SMTP.Address
		d.Users.Count, d.Users.PasswordEnv = c.Users.Count, c.Users.PasswordEnv
		d.Load.SessionsPerHour = c.Load.SessionsPerHour
		d.Phases.Warmup, d.Phases.Measurement, d.Phases.Rampdown = c.Phases.Warmup, c.Phases.Measurement, c.Phases.Rampdown
		if diff := configDiff(c, d); diff != "" {
			t.Errorf("enterprise.toml differs from the defaults: %s", diff)
		}
	}
}

// configDiff compares two configs through their error-free text rendering.
func configDiff(a, b *Config) string {
	pa, err1 := NewPlan(a)
	pb, err2 := NewPlan(b)
	if err1 != nil || err2 != nil {
		return "plan: " + errors.Join(err1, err2).Error()
	}
	var sa, sb strings.Builder
	pa.WriteText(&sa)
	pb.WriteText(&sb)
	if sa.String() != sb.String() {
		return "\n" + sa.String() + "\nvs\n" + sb.String()
	}
	return ""
}

func TestDefaultConfigIsValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "target.imap.address: required") {
		t.Errorf("defaults without a target: err = %v, want target address required", err)
	}
	c.Target.Embedded = true
	if err := c.Validate(); err != nil {
		t.Errorf("defaults with embedded target: %v", err)
	}
	// An empty file (plus a target) gives exactly the defaults.
	got, err := ParseConfig("empty.toml", []byte("[target]\nembedded = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.File = "empty.toml"
	if diff := configDiff(got, c); diff != "" {
		t.Error(diff)
	}
	if r := got.TargetRate(); r != 100*4.8 {
		t.Errorf("TargetRate = %v, want %v", r, 100*4.8)
	}
}

func TestParseValues(t *testing.T) {
	const head = "[target]\nembedded = true\n"
	tests := []struct {
		name, src string
		check     func(*Config) bool
	}{
		{"duration compound", "[phases]\nmeasurement = \"1m30s\"\n", func(c *Config) bool { return c.Phases.Measurement.Duration == 90*time.Second }},
		{"duration ms", "[load]\nthink_time = \"250ms\"\n", func(c *Config) bool { return c.Load.ThinkTime.Duration == 250*time.Millisecond }},
		{"size integer", "[messages]\nsizes = [{size = 512, share = 100}]\n", func(c *Config) bool { return len(c.Messages.Sizes) == 1 && c.Messages.Sizes[0].Size == 512 }},
		{"size B", "[messages]\nsizes = [{size = \"512B\", share = 100}]\n", func(c *Config) bool { return c.Messages.Sizes[0].Size == 512 }},
		{"size MiB space", "[messages]\nsizes = [{size = \"1 MiB\", share = 99.995}]\n", func(c *Config) bool { return c.Messages.Sizes[0].Size == MiB }},
		{"sizes replace defaults", "[[messages.sizes]]\nsize = \"4KiB\"\nshare = 100\n", func(c *Config) bool { return len(c.Messages.Sizes) == 1 }},
		{"rate from users", "[users]\ncount = 10\n[load]\nsessions_per_user_hour = 6\n", func(c *Config) bool { return c.TargetRate() == 60 }},
		{"explicit rate wins", "[users]\ncount = 10\n[load]\nsessions_per_hour = 7\n", func(c *Config) bool { return c.TargetRate() == 7 }},
		{"dotted keys", "load.think_time = \"1s\"\nusers.count = 3\n", func(c *Config) bool { return c.Users.Count == 3 && c.Load.ThinkTime.Duration == time.Second }},
		{"function override", "[compliance.functions]\n\"IMAP APPEND\" = { limit = \"9s\" }\n", func(c *Config) bool {
			l, r := c.Limit(measure.IMAPAppend)
			return l == 9*time.Second && r == 95
		}},
		{"weights need not sum to 100", "[sessions]\ncheck.weight = 1\nread.weight = 1\ncleanup.weight = 0\nfolders.weight = 0\nsend.weight = 0\n", func(c *Config) bool { return c.Sessions.Check.Weight == 1 }},
		{"defaults kept beside set keys", "[sessions.read]\nweight = 5\n", func(c *Config) bool { return c.Sessions.Read.BodiesMax == 3 && c.Sessions.Read.FetchCount == 20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig("t.toml", []byte(tt.src+head))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("unexpected config: %+v", c)
			}
		})
	}
}

func TestByteSizeText(t *testing.T) {
	tests := []struct {
		in      string
		want    ByteSize
		wantErr string
	}{
		{"0", 0, ""}, {"1", 1, ""}, {"1KiB", KiB, ""}, {"64KiB", 64 * KiB, ""}, {"3MiB", 3 * MiB, ""}, {"2GiB", 2 * GiB, ""},
		{"2KB", 0, "ambiguous"}, {"1MB", 0, "ambiguous"}, {"1k", 0, "ambiguous"}, {"1kib", 0, "unknown unit"},
		{"", 0, "invalid size"}, {"KiB", 0, "invalid size"}, {"-1", 0, "invalid size"}, {"1.5KiB", 0, "unknown unit"},
		{"99999999999GiB", 0, "too large"},
	}
	for _, tt := range tests {
		var s ByteSize
		err := s.UnmarshalText([]byte(tt.in))
		switch {
		case tt.wantErr == "" && (err != nil || s != tt.want):
			t.Errorf("%q: got %d, %v; want %d", tt.in, s, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q: err = %v, want %q", tt.in, err, tt.wantErr)
		}
		if err == nil && tt.in != "" {
			// The rendering parses back to the same size.
			var back ByteSize
			if err := back.UnmarshalText([]byte(s.String())); err != nil || back != s {
				t.Errorf("%q: String %q parses to %d, %v", tt.in, s.String(), back, err)
			}
		}
	}
}

func TestDurationText(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"30s", 30 * time.Second, ""}, {"1m30s", 90 * time.Second, ""}, {"0s", 0, ""},
		{"30", 0, "no unit"}, {"2.5", 0, "no unit"}, {"true", 0, "invalid duration"}, {"10 minutes", 0, "invalid duration"},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalText([]byte(tt.in))
		switch {
		case tt.wantErr == "" && (err != nil || d.Duration != tt.want):
			t.Errorf("%q: got %v, %v; want %v", tt.in, d, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q: err = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestPassword(t *testing.T) {
	const env = "MAILBENCH_TEST_PASSWORD_XYZ"
	tests := []struct {
		name      string
		pw, env   string
		envValue  string
		want      string
		wantError bool
	}{
		{"plain", "secret1", "", "", "secret1", false},
		{"env wins", "secret1", env, "fromenv", "fromenv", false},
		{"env empty falls back", "secret1", env, "", "secret1", false},
		{"env empty no fallback", "", env, "", "", true},
		{"nothing", "", "", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(env, tt.envValue)
			c := DefaultConfig()
			c.Users.Password, c.Users.PasswordEnv = tt.pw, tt.env
			got, err := c.Password()
			if got != tt.want || (err != nil) != tt.wantError {
				t.Fatalf("Password() = %q, %v; want %q, error %v", got, err, tt.want, tt.wantError)
			}
			if err != nil && tt.pw != "" && strings.Contains(err.Error(), tt.pw) {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}

// TestPasswordNeverInErrors feeds configs whose password line is broken in
// various ways and checks no error repeats the password.
func TestPasswordNeverInErrors(t *testing.T) {
	const pw = "Zq9-hunter2-secret"
	for _, src := range []string{
		"[users]\npassword = " + pw + "\n",
		"[users]\npassword = \"" + pw + "\nx=1\n",
		"[users]\npassword = [\"" + pw + "\"]\n",
		"[users]\npassword = { v = \"" + pw + "\" }\n",
		"[users]\npassword = '''" + pw + "\n",
		"[users]\npassword = \"" + pw + "\"\npassword_env = \"" + pw + " x\"\ncount = -1\n",
		"[users.password]\n" + pw + " = 1\n",
	} {
		_, err := ParseConfig("p.toml", []byte(src))
		if err == nil {
			t.Errorf("accepted %q", src)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error of %q leaks the password: %v", src, err)
		}
	}
}

func TestLimit(t *testing.T) {
	c := DefaultConfig()
	c.Compliance.Functions = map[string]FunctionLimit{
		string(measure.IMAPFetchBody): {Limit: Duration{10 * time.Second}},
		string(measure.SMTPData):      {RequiredPercent: 99},
		string(measure.DeliveryLocal): {Limit: Duration{30 * time.Second}},
	}
	tests := []struct {
		fn       measure.Function
		limit    time.Duration
		required float64
	}{
		{measure.IMAPConnect, 5 * time.Second, 95},
		{measure.IMAPFetchBody, 10 * time.Second, 95},
		{measure.SMTPData, 5 * time.Second, 99},
		{measure.DeliveryLocal, 30 * time.Second, 95},
		{measure.DeliveryRemote, 60 * time.Second, 95},
	}
	for _, tt := range tests {
		l, r := c.Limit(tt.fn)
		if l != tt.limit || r != tt.required {
			t.Errorf("Limit(%s) = %v, %v; want %v, %v", tt.fn, l, r, tt.limit, tt.required)
		}
	}
}

func TestLoadUsersPattern(t *testing.T) {
	c := DefaultConfig()
	c.Users.Count, c.Users.Pattern, c.Users.Password = 3, "load%03d", "pw"
	users, err := c.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	want := []User{
		{"load001", "load001", "pw", "load001@example.test"},
		{"load002", "load002", "pw", "load002@example.test"},
		{"load003", "load003", "pw", "load003@example.test"},
	}
	if len(users) != len(want) {
		t.Fatalf("got %d users", len(users))
	}
	for i := range want {
		if users[i] != want[i] {
			t.Errorf("user %d = %+v, want %+v", i, users[i], want[i])
		}
	}
	c.Users.LoginWithDomain = true
	users, _ = c.LoadUsers()
	if users[1].Login != "load002@example.test" || users[1].Name != "load002" {
		t.Errorf("login_with_domain: %+v", users[1])
	}
	if s := users[0].String(); strings.Contains(s, "pw") {
		t.Errorf("String() = %q shows the password", s)
	}
	c.Users.Password = ""
	if _, err := c.LoadUsers(); err == nil {
		t.Error("LoadUsers without a password succeeded")
	}
}

func TestLoadUsersFile(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sub", "bench.toml")
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		csv     string
		want    []User
		wantErr string
	}{
		{"header", "user,password\nalice,sekA\nbob@example.test,sekB\n", []User{{"alice", "alice", "sekA", "alice@example.test"}, {"bob", "bob", "sekB", "bob@example.test"}}, ""},
		{"no header, comments", "# accounts\nalice,sekA\n\n bob , sekB\n", []User{{"alice", "alice", "sekA", "alice@example.test"}, {"bob", "bob", "sekB", "bob@example.test"}}, ""},
		{"wrong domain", "alice,sekA\ncarol@other.test,sekC\n", nil, "users.csv:2: user \"carol@other.test\" is not in users.local_domain \"example.test\""},
		{"fields", "alice,sekA\nbob\ncarol,sekC,x\n", nil, "users.csv:2: want 2 fields user,password (got 1)\nusers.csv:3: want 2 fields user,password (got 3)"},
		{"duplicate", "alice,sekA\nAlice,sekB\n", nil, "users.csv:2: user \"Alice\" already listed on line 1"},
		{"empty password", "alice,\n", nil, "users.csv:1: user \"alice\" has an empty password"},
		{"empty", "user,password\n", nil, "users.csv: no users"},
		{"quote", "alice,\"sekA\n", nil, "users.csv:1: invalid CSV: extraneous or missing \" in quoted-field"},
		// These panicked in FieldPos (an error on the first record).
		{"unterminated quote", "\"", nil, "users.csv:1: invalid CSV: extraneous or missing \" in quoted-field"},
		{"bare quote first", "a\"b,sekA\n", nil, "users.csv:1: invalid CSV: bare \" in non-quoted-field"},
		{"unterminated quote later", "alice,sekA\nbob,\"sekB\ncarol,sekC\n", nil, "users.csv:2: invalid CSV: extraneous or missing \" in quoted-field (in the record running to line 3)"},
		{"newline in name", "alice,sekA\n\"bob\nx\",sekB\n", nil, "users.csv:2: invalid user name (not shown: it holds a comma or a control character such as a line break; is a quote left open?)"},
		{"quote swallows a password", "\"bob,sekB\nalice\",sekA\n", nil, "users.csv:1: invalid user name (not shown: it holds a comma or a control character such as a line break; is a quote left open?)"},
		{"newline in password", "alice,\"sek\nA\"\n", nil, "users.csv:1: user \"alice\": the password holds a line break or NUL (a quote left open?)"},
		{"control in name", "al\x01ice,sekA\n", nil, "users.csv:1: invalid user name (not shown: it holds a comma or a control character such as a line break; is a quote left open?)"},
		{"space in name", "al ice,sekA\n", nil, "users.csv:1: invalid user name \"al ice\""},
		{"long line", "alice,sekA\nbob," + strings.Repeat("x", 9000) + "\n", nil, "users.csv:2: line longer than 8192 bytes"},
		{"long name", strings.Repeat("a", 256) + ",sekA\n", nil, "users.csv:1: user name longer than 255 bytes"},
		{"errors stop at 20", strings.Repeat("x\n", 100), nil, strings.TrimSuffix(strings.Repeat("users.csv:%d: want 2 fields user,password (got 1)\n", 20), "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte(tt.csv), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := ParseConfig(cfgPath, []byte("[target]\nembedded = true\n[users]\nfile = \"../users.csv\"\n[load]\nsessions_per_hour = 10\n"))
			if err != nil {
				t.Fatal(err)
			}
			users, err := c.LoadUsers()
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("no error, users %+v", users)
				}
				got := strings.ReplaceAll(err.Error(), filepath.Join(dir, "sub", "..", "users.csv"), "users.csv")
				got = strings.ReplaceAll(got, filepath.Join(dir, "users.csv"), "users.csv")
				want := tt.wantErr
				if strings.Contains(want, "%d") {
					want = numberLines(want)
				}
				if got != want {
					t.Fatalf("error:\n%s\nwant:\n%s", got, want)
				}
				if strings.Contains(got, "sek") {
					t.Errorf("error shows a password: %s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(users) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", users, tt.want)
			}
			for i := range users {
				if users[i] != tt.want[i] {
					t.Errorf("user %d = %+v, want %+v", i, users[i], tt.want[i])
				}
			}
		})
	}
}

// numberLines replaces the %d of each line of s by its 1-based number.
func numberLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = fmt.Sprintf(l, i+1)
	}
	return strings.Join(lines, "\n")
}

// TestLoadUsersFileReadOnce: a loaded config (and its copies) reads its
// users file once: a file changed or gone afterwards gives the users first
// read; other [users] settings read it again.
func TestLoadUsersFileReadOnce(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "users.csv")
	if err := os.WriteFile(csv, []byte("alice,sekA\nbob,sekB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "bench.toml")
	if err := os.WriteFile(cfgPath, []byte("[target]\nembedded = true\n[users]\nfile = \"users.csv\"\n[load]\nsessions_per_hour = 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(cfgPath, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.LoadUsers()
	if err != nil || len(first) != 2 {
		t.Fatalf("first read: %d users, %v", len(first), err)
	}
	if err := os.WriteFile(csv, []byte("carol,sekC\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	copied := *c
	for name, cfg := range map[string]*Config{"the config": c, "a copy": &copied} {
		again, err := cfg.LoadUsers()
		if err != nil || len(again) != 2 || again[0].Name != "alice" {
			t.Errorf("%s, after the file changed: %+v, %v: want the users first read", name, again, err)
		}
	}
	copied.Users.LoginWithDomain = true
	other, err := copied.LoadUsers()
	if err != nil || len(other) != 1 || other[0].Login != "carol@example.test" {
		t.Errorf("other settings: %+v, %v: want the file read again", other, err)
	}
}
