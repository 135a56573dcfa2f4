package workload

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLimits feeds one value at a time at and beyond its maximum: above,
// the exact error naming the maximum; at it and at sizing-run values, no
// error.
func TestLimits(t *testing.T) {
	const head = "[target]\nembedded = true\n"
	tests := []struct {
		name, src, want string
	}{
		{"users", "[users]\ncount = 1000000000000\n", "l.toml:4: users.count: 1000000000000 is above the maximum of 10000000"},
		{"users at max", "[users]\ncount = 10000000\n[load]\nsessions_per_hour = 1e7\n", ""},
		{"sizing run", "[users]\ncount = 100000\n[load]\nsessions_per_hour = 5e7\nmax_concurrent_sessions = 200000\n", ""},
		{"sizing run derived rate", "[users]\ncount = 100000\n[load]\nsessions_per_user_hour = 480\n", ""},
		{"rate", "[load]\nsessions_per_hour = 1e15\n", "l.toml:4: load.sessions_per_hour: 1000000000000000 is above the maximum of 1000000000"},
		{"rate at max", "[load]\nsessions_per_hour = 1e9\n", ""},
		{"rate huge", "[load]\nsessions_per_hour = 1.7e308\n", "l.toml:4: load.sessions_per_hour: 1.7e+308 is above the maximum of 1000000000"},
		{"per-user rate", "[load]\nsessions_per_user_hour = 1e12\n", "l.toml:4: load.sessions_per_user_hour: 1000000000000 is above the maximum of 1000000000"},
		{"derived rate", "[users]\ncount = 10000000\n[load]\nsessions_per_user_hour = 101\n",
			"l.toml:6: load.sessions_per_user_hour: users.count × sessions_per_user_hour = 1010000000 sessions/hour is above the maximum of 1000000000 (set load.sessions_per_hour or fewer users)"},
		{"derived rate, explicit rate wins", "[users]\ncount = 10000000\n[load]\nsessions_per_user_hour = 101\nsessions_per_hour = 1e6\n", ""},
		{"concurrency", "[load]\nmax_concurrent_sessions = 1000001\n", "l.toml:4: load.max_concurrent_sessions: 1000001 is above the maximum of 1000000"},
		{"think time", "[load]\nthink_time = \"61m\"\n", "l.toml:4: load.think_time: 1h1m0s is above the maximum of 1h0m0s"},
		{"think time at max", "[load]\nthink_time = \"1h\"\n", ""},
		{"inbound", "[load]\ninbound_per_session = 1001\n", "l.toml:4: load.inbound_per_session: 1001 is above the maximum of 1000"},
		{"phase", "[phases]\nwarmup = \"721h\"\n", "l.toml:4: phases.warmup: 721h0m0s is above the maximum of 720h0m0s"},
		{"phase overflow sum", "[phases]\nmeasurement = \"2562047h\"\nsettle = \"2562047h\"\n",
			"l.toml:4: phases.measurement: 2562047h0m0s is above the maximum of 720h0m0s\nl.toml:5: phases.settle: 2562047h0m0s is above the maximum of 720h0m0s"},
		{"inbox", "[mailboxes]\ninbox_messages = 50000000\n", "l.toml:4: mailboxes.inbox_messages: 50000000 is above the maximum of 100000"},
		{"inbox at max", "[mailboxes]\ninbox_messages = 100000\n", ""},
		{"folder messages", "[mailboxes]\nfolder_messages_max = 100001\n", "l.toml:4: mailboxes.folder_messages_max: 100001 is above the maximum of 100000"},
		{"folder messages min", "[mailboxes]\nfolder_messages_min = 9000000000\nfolder_messages_max = 9000000000\n", "l.toml:4: mailboxes.folder_messages_min: 9000000000 is above the maximum of 100000"},
		{"folders", "[mailboxes]\nfolders = [" + strings.Repeat("\"f\",", 1001) + "]\n", "l.toml:4: mailboxes.folders: 1001 is above the maximum of 1000"},
		{"fetch count", "[sessions.check]\nfetch_count = 4294967297\n", "l.toml:4: sessions.check.fetch_count: 4294967297 is above the maximum of 100000"},
		{"bodies", "[sessions.read]\nbodies_max = 1001\n", "l.toml:4: sessions.read.bodies_max: 1001 is above the maximum of 1000"},
		{"weight", "[sessions.send]\nweight = 1e308\n", "l.toml:4: sessions.send.weight: 1e+308 is above the maximum of 1000000"},
		{"size", "[[messages.sizes]]\nsize = \"1GiB\"\nshare = 100\n", "l.toml:4: messages.sizes[0].size: 1GiB is above the maximum of 256MiB"},
		{"size at max", "[[messages.sizes]]\nsize = \"256MiB\"\nshare = 100\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("l.toml", []byte(head+tt.src))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestLimitsInCode checks that a Config changed in code after loading (as
// the command line's --users and --rate do) meets the same maximums.
func TestLimitsInCode(t *testing.T) {
	c := DefaultConfig()
	c.Target.Embedded = true
	c.Users.Count = 1_000_000_000_000
	c.Load.SessionsPerHour = 1e15
	want := "load.sessions_per_hour: 1000000000000000 is above the maximum of 1000000000\nusers.count: 1000000000000 is above the maximum of 10000000"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want:\n%s", err, want)
	}
}

// testPEM writes a self-signed certificate and its key to dir and returns
// their paths.
func testPEM(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{name}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})))
	return certFile, keyFile
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCheckInputs writes a config and the files it names, and checks the
// exact error of Load with its overrides, then of CheckInputs ($DIR stands
// for the directory of the files). No error may show a password, from the
// file or the environment.
func TestCheckInputs(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testPEM(t, dir, "ca")
	sinkCert, sinkKey := testPEM(t, dir, "sink")
	_, otherKey := testPEM(t, dir, "other")
	writeFile(t, filepath.Join(dir, "garbage.pem"), "not a certificate\n")
	writeFile(t, filepath.Join(dir, "users.csv"), "alice,sekA\nbob,sekB\n")
	writeFile(t, filepath.Join(dir, "open-quote.csv"), "alice,sekA\nbob,\"sekB\ncarol,sekC\n")
	writeFile(t, filepath.Join(dir, "empty.csv"), "user,password\n# nobody yet\n")
	writeFile(t, filepath.Join(dir, "dup.csv"), "alice,sekA\nAlice@example.test,sekB\n")
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	const env = "MAILBENCH_TEST_CHECK_INPUTS_PW"
	const envValue = "sekEnv-Qx7"
	// A target with TLS on both endpoints and the CA given.
	remote := func(imapCA, smtpCA string) string {
		return fmt.Sprintf("[target.imap]\naddress = \"imap.test:993\"\ntls = \"implicit\"\nca_file = %q\n"+
			"[target.smtp]\naddress = \"smtp.test:587\"\ntls = \"starttls\"\nca_file = %q\n", imapCA, smtpCA)
	}
	const pw = "[users]\npassword = \"sekFile\"\n"
	fromFile := func(csv string) string {
		return "[target]\nembedded = true\n[users]\nfile = " + strconvQuote(csv) + "\n[load]\nsessions_per_hour = 100\n"
	}
	tests := []struct {
		name     string
		toml     string
		envValue string
		over     Overrides // laid over the file, as the command line's flags are
		want     string
	}{
		{"all good", remote(ca, ca) + pw + "[sink]\ntls = \"starttls\"\ncert_file = " + strconvQuote(sinkCert) + "\nkey_file = " + strconvQuote(sinkKey) + "\n", "", Overrides{}, ""},
		{"users file good", fromFile("users.csv"), "", Overrides{}, ""},
		{"users file missing", fromFile("nope.csv"), "", Overrides{}, "$DIR/bench.toml:4: users.file: $DIR/nope.csv: no such file"},
		{"users file a directory", fromFile("adir"), "", Overrides{}, "$DIR/bench.toml:4: users.file: $DIR/adir: is a directory, not a file"},
		{"users file open quote", fromFile("open-quote.csv"), "", Overrides{}, "$DIR/open-quote.csv:2: invalid CSV: extraneous or missing \" in quoted-field (in the record running to line 3)"},
		{"users file empty", fromFile("empty.csv"), "", Overrides{}, "$DIR/empty.csv: no users"},
		{"users file duplicate", fromFile("dup.csv"), "", Overrides{}, "$DIR/dup.csv:2: user \"Alice@example.test\" already listed on line 1"},
		{"users override beside a users file", fromFile("users.csv"), "", Overrides{Users: ptr(5)},
			"--users: $DIR/bench.toml takes its users from users.csv"},
		{"password env unset", "[target]\nembedded = true\n[users]\npassword_env = \"" + env + "\"\n", "", Overrides{},
			"$DIR/bench.toml:4: users.password_env: environment variable " + env + " is empty or unset and users.password is not set"},
		{"password env set", "[target]\nembedded = true\n[users]\npassword_env = \"" + env + "\"\n", envValue, Overrides{}, ""},
		{"password env unset, fallback", "[target]\nembedded = true\n[users]\npassword_env = \"" + env + "\"\npassword = \"sekFile\"\n", "", Overrides{}, ""},
		{"no password", "[target]\nembedded = true\n[users]\ncount = 5\n", "", Overrides{}, "$DIR/bench.toml:3: users: no password: set users.password or users.password_env"},
		{"ca file missing", remote(filepath.Join(dir, "nope.pem"), ca) + pw, "", Overrides{}, "$DIR/bench.toml:4: target.imap.ca_file: $DIR/nope.pem: no such file"},
		{"ca file garbage", remote(ca, filepath.Join(dir, "garbage.pem")) + pw, "", Overrides{}, "$DIR/bench.toml:8: target.smtp.ca_file: $DIR/garbage.pem: no PEM certificate in it"},
		{"ca file a directory", remote(filepath.Join(dir, "adir"), ca) + pw, "", Overrides{}, "$DIR/bench.toml:4: target.imap.ca_file: $DIR/adir: is a directory, not a file"},
		{"ca file unused without TLS", "[target.imap]\naddress = \"imap.test:143\"\nca_file = \"nope.pem\"\n[target.smtp]\naddress = \"smtp.test:25\"\n" + pw, "", Overrides{}, ""},
		{"ca file unused by the embedded target", remote("nope.pem", "nope.pem") + "[target]\nembedded = true\n" + pw, "", Overrides{}, ""},
		{"inbound ca file", remote(ca, ca) + "[target.inbound]\ntls = \"starttls\"\nca_file = \"nope.pem\"\n" + pw, "", Overrides{}, "$DIR/bench.toml:11: target.inbound.ca_file: nope.pem: no such file"},
		{"sink key missing", "[target]\nembedded = true\n" + pw + "[sink]\ntls = \"implicit\"\ncert_file = " + strconvQuote(sinkCert) + "\nkey_file = \"nope.key\"\n", "", Overrides{},
			"$DIR/bench.toml:8: sink.key_file: nope.key: no such file"},
		{"sink key of another certificate", "[target]\nembedded = true\n" + pw + "[sink]\ntls = \"implicit\"\ncert_file = " + strconvQuote(sinkCert) + "\nkey_file = " + strconvQuote(otherKey) + "\n", "", Overrides{},
			"$DIR/bench.toml:7: sink.cert_file: $DIR/sink.pem with key_file $DIR/other.key: tls: private key does not match public key"},
		{"sink files unused without TLS", "[target]\nembedded = true\n" + pw + "[sink]\ncert_file = \"nope.pem\"\nkey_file = \"nope.key\"\n", "", Overrides{}, ""},
		{"override above its bound", "[target]\nembedded = true\n" + pw + "[load]\nsessions_per_hour = 100\n", "", Overrides{SessionsPerHour: ptr(1e15)},
			"--rate: load.sessions_per_hour: 1000000000000000 is above the maximum of 1000000000"},
		{"override of an unwritten key", "[target]\nembedded = true\n" + pw, "", Overrides{Users: ptr(1_000_000_000_000)},
			"--users: users.count: 1000000000000 is above the maximum of 10000000"},
		{"override of a population's rate", "[target]\nembedded = true\n" + pw + "[population]\nusers = 10\nmix = [{users = \"light\", client = \"desktop\", share = 1.0}]\n", "", Overrides{SessionsPerHour: ptr(100.0)},
			"--rate: $DIR/bench.toml describes its load as users of a [population] mix: set how many with --users (or population.users)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(env, tt.envValue)
			path := filepath.Join(dir, "bench.toml")
			writeFile(t, path, tt.toml)
			c, err := Load(path, tt.over)
			if err == nil {
				err = c.CheckInputs()
			}
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), dir, "$DIR")
				var ces ConfigErrors
				if !errors.As(err, &ces) {
					t.Errorf("error is %T, want ConfigErrors", err)
				}
				if strings.Contains(got, "sek") {
					t.Errorf("error shows a password: %s", got)
				}
			}
			if got != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// TestLoadRefuses checks the files Load refuses before parsing them.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	writeFile(t, big, "# "+strings.Repeat("x", MaxConfigBytes)+"\n")
	tests := []struct{ path, want string }{
		{dir, "$DIR: is a directory, not a file"},
		{filepath.Join(dir, "nope.toml"), "$DIR/nope.toml: no such file"},
		{big, "$DIR/big.toml: larger than the maximum of 1048576 bytes"},
	}
	for _, tt := range tests {
		c, err := Load(tt.path, Overrides{})
		if err == nil {
			t.Errorf("Load(%s) = %+v", tt.path, c)
			continue
		}
		var ces ConfigErrors
		if !errors.As(err, &ces) {
			t.Errorf("Load(%s): error is %T, want ConfigErrors", tt.path, err)
		}
		if got := strings.ReplaceAll(err.Error(), dir, "$DIR"); got != tt.want {
			t.Errorf("Load(%s) error:\n%s\nwant:\n%s", tt.path, got, tt.want)
		}
	}
	if _, err := ParseConfig("big.toml", make([]byte, MaxConfigBytes+1)); err == nil || err.Error() != "big.toml: 1048577 bytes is above the maximum of 1048576" {
		t.Errorf("ParseConfig of a large input: %v", err)
	}
}

// TestShape checks the bounds of nesting and dotted keys checked before
// decoding (the decoder is quadratic in both), and that brackets and dots
// in strings and comments don't count.
func TestShape(t *testing.T) {
	const tail = "\n[target]\nembedded = true\n"
	deep := func(n int) string { return strings.Repeat("{b=", n) + "1" + strings.Repeat("}", n) }
	dotted := func(n int) string { return "a" + strings.Repeat(".a", n-1) }
	tests := []struct{ name, src, want string }{
		{"inline tables", "x = " + deep(200000) + "\n", "s.toml:1: nested more than 32 levels deep"},
		{"arrays", "\n\nx = " + strings.Repeat("[", 33) + "\n", "s.toml:3: nested more than 32 levels deep"},
		{"nesting at the bound", "x = " + deep(31) + "\n", "s.toml:1: x: unknown key"},
		{"dotted key", dotted(400000) + " = 1\n", "s.toml:1: a dotted key of more than 32 parts"},
		{"dotted header", "[" + dotted(33) + "]\n", "s.toml:1: a dotted key of more than 32 parts"},
		{"quoted parts", "[users]\n" + strings.Repeat("\"a\" . ", 40) + "b = 1\n", "s.toml:2: a dotted key of more than 32 parts"},
		{"dotted key at the bound", dotted(32) + " = 1\n", "s.toml:1: a: unknown key"},
		{"brackets in strings and comments", "[mailboxes]\nfolders = [\"" + strings.Repeat("[{", 40) + "\", '" + strings.Repeat("[", 40) + "',\n" +
			"# " + strings.Repeat("[", 40) + "\n\"\"\"\n" + strings.Repeat("{", 40) + "\n\"\"\"]\n", ""},
		{"dots in strings and numbers", "name = \"" + strings.Repeat("a.", 40) + "\"\n[messages]\nremote_share = 0.5\n", ""},
		{"multi-line string closed by five quotes", "name = \"\"\"x\"\"\"\"\"\ny = " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "\n", "s.toml:2: y: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("s.toml", []byte(tt.src+tail))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				if len(got) > 300 {
					got = got[:300] + "..."
				}
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestManyErrors checks that a file of many problems lists the first 100
// and counts the rest.
func TestManyErrors(t *testing.T) {
	var b strings.Builder
	var want []string
	for i := 1; i <= 150; i++ {
		fmt.Fprintf(&b, "k%d = 1\n", i)
		if i <= 100 {
			want = append(want, fmt.Sprintf("m.toml:%d: k%d: unknown key", i, i))
		}
	}
	want = append(want, "m.toml: and 50 more problems")
	_, err := ParseConfig("m.toml", []byte(b.String()))
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("error:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

func ptr[T any](v T) *T { return &v }
