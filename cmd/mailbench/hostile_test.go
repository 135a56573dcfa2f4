package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/report"
)

// TestHostileInput runs every hostile input (absurd flags, bad files,
// values out of range) through realMain,
// for check and run alike: each must fail before any work starts with its
// exact message (a substring of stderr, $DIR standing for the test's
// directory) and its exit code. check and run give the same verdict.
func TestHostileInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("users.csv", "alice,sekA\nbob,sekB\n")
	write("open-quote.csv", "alice,sekA\nbob,\"sekB\ncarol,sekC\n")
	write("empty.csv", "user,password\n")
	write("dup.csv", "alice,sekA\nAlice@example.test,sekB\n")
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	const pwEnv = "MAILBENCH_TEST_HOSTILE_PW"
	t.Setenv(pwEnv, "")
	embedded := "name = \"h\"\n[target]\nembedded = true\n"
	fromFile := func(name, csv string) string {
		return write(name, embedded+"[users]\nfile = "+fmt.Sprintf("%q", filepath.Join(dir, csv))+"\n[load]\nsessions_per_hour = 100\n")
	}
	cfgs := map[string]string{
		"good":      write("good.toml", embedded+"[users]\ncount = 5\npassword = \"sekFile\"\n"),
		"openquote": fromFile("openquote.toml", "open-quote.csv"),
		"nocsv":     fromFile("nocsv.toml", "nope.csv"),
		"csvdir":    fromFile("csvdir.toml", "adir"),
		"emptycsv":  fromFile("emptycsv.toml", "empty.csv"),
		"dupcsv":    fromFile("dupcsv.toml", "dup.csv"),
		"hugeusers": write("hugeusers.toml", embedded+"[users]\ncount = 1000000000000\npassword = \"sekFile\"\n"),
		"hugerate":  write("hugerate.toml", embedded+"[users]\npassword = \"sekFile\"\n[load]\nsessions_per_hour = 1e15\n"),
		"pwenv":     write("pwenv.toml", embedded+"[users]\npassword_env = \""+pwEnv+"\"\n"),
		"noca": write("noca.toml", "name = \"h\"\n[target.imap]\naddress = \"127.0.0.1:1\"\ntls = \"implicit\"\nca_file = "+
			fmt.Sprintf("%q", filepath.Join(dir, "nope.pem"))+"\n[target.smtp]\naddress = \"127.0.0.1:1\"\n[users]\npassword = \"sekFile\"\n"),
		"csvusers": fromFile("csvusers.toml", "users.csv"),
		"1ns":      write("1ns.toml", embedded+"[users]\npassword = \"sekFile\"\n[load]\nop_timeout = \"1ns\"\n"),
	}

	check := func(t *testing.T, args []string, want string, wantCode int) {
		t.Helper()
		code, stdout, stderr := runMain(args...)
		stderr = strings.ReplaceAll(stderr, dir, "$DIR")
		if code != wantCode || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d (want %d), stderr lacks %q:\n%s\nstdout:\n%s", args, code, wantCode, want, stderr, stdout)
		}
		if strings.Contains(stderr+stdout, "sek") {
			t.Errorf("%v: output shows a password:\n%s%s", args, stderr, stdout)
		}
	}
	tests := []struct {
		name string
		args []string // after the command; "@x" is cfgs["x"]
		want string
		code int
	}{
		{"CSV with an unterminated quote", []string{"@openquote"}, "$DIR/open-quote.csv:2: invalid CSV: extraneous or missing \" in quoted-field", exitUsage},
		{"users.count 1e12", []string{"@hugeusers"}, "$DIR/hugeusers.toml:5: users.count: 1000000000000 is above the maximum of 10000000", exitUsage},
		{"sessions_per_hour 1e15", []string{"@hugerate"}, "$DIR/hugerate.toml:7: load.sessions_per_hour: 1000000000000000 is above the maximum of 1000000000", exitUsage},
		{"--users 0", []string{"@good", "--users", "0"}, "--users 0: out of range: must be 1 to 10000000", exitUsage},
		{"--users -3", []string{"@good", "--users=-3"}, "--users -3: out of range: must be 1 to 10000000", exitUsage},
		{"--users 1e12", []string{"@good", "--users", "1000000000000"}, "--users 1000000000000: out of range: must be 1 to 10000000", exitUsage},
		{"--users with a users file", []string{"@csvusers", "--users", "3"}, "--users: $DIR/csvusers.toml takes its users from $DIR/users.csv", exitUsage},
		{"missing CSV", []string{"@nocsv"}, "$DIR/nocsv.toml:5: users.file: $DIR/nope.csv: no such file", exitUsage},
		{"CSV a directory", []string{"@csvdir"}, "$DIR/csvdir.toml:5: users.file: $DIR/adir: is a directory, not a file", exitUsage},
		{"empty CSV", []string{"@emptycsv"}, "$DIR/empty.csv: no users", exitUsage},
		{"duplicate CSV", []string{"@dupcsv"}, "$DIR/dup.csv:2: user \"Alice@example.test\" already listed on line 1", exitUsage},
		{"unset password_env", []string{"@pwenv"}, "$DIR/pwenv.toml:5: users.password_env: environment variable " + pwEnv + " is empty or unset and users.password is not set", exitUsage},
		{"missing ca_file", []string{"@noca"}, "$DIR/noca.toml:5: target.imap.ca_file: $DIR/nope.pem: no such file", exitUsage},
		{"op_timeout 1ns", []string{"@1ns"}, "$DIR/1ns.toml:7: load.op_timeout: 1ns is below the minimum of 10ms", exitUsage},
	}
	// A shipped config whose password comes from the environment only.
	t.Run("check enterprise without its password", func(t *testing.T) {
		t.Setenv("MAILBENCH_PASSWORD", "")
		for _, cmd := range []string{"check", "run"} {
			check(t, []string{cmd, "enterprise"}, "configs/enterprise.toml:39: users.password_env: environment variable MAILBENCH_PASSWORD is empty or unset and users.password is not set", exitUsage)
		}
	})
	runOnly := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"--rate -5", []string{"@good", "--rate=-5"}, "--rate -5: out of range: must be above 0 and at most 1e+09 sessions per hour", exitUsage},
		{"--rate 0", []string{"@good", "--rate", "0"}, "--rate 0: out of range: must be above 0 and at most 1e+09 sessions per hour", exitUsage},
		{"--rate 1e15", []string{"@good", "--rate", "1e15"}, "--rate 1e+15: out of range: must be above 0 and at most 1e+09 sessions per hour", exitUsage},
		{"--rate NaN", []string{"@good", "--rate", "NaN"}, "--rate NaN: out of range", exitUsage},
		{"--measurement 0", []string{"@good", "--measurement", "0"}, "--measurement 0s: out of range: must be above 0 and at most 720h0m0s", exitUsage},
		{"--measurement -1m", []string{"@good", "--measurement=-1m"}, "--measurement -1m0s: out of range", exitUsage},
		{"--measurement 1000h", []string{"@good", "--measurement", "1000h"}, "--measurement 1000h0m0s: out of range: must be above 0 and at most 720h0m0s", exitUsage},
	}
	expand := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			if strings.HasPrefix(a, "@") {
				a = cfgs[a[1:]]
			}
			out[i] = a
		}
		return out
	}
	for _, tt := range tests {
		for _, cmd := range []string{"check", "run", "sweep", "compare-tls"} {
			t.Run(cmd+" "+tt.name, func(t *testing.T) {
				check(t, append([]string{cmd}, expand(tt.args)...), tt.want, tt.code)
			})
		}
	}
	for _, tt := range runOnly {
		for _, cmd := range []string{"run", "sweep", "compare-tls"} {
			t.Run(cmd+" "+tt.name, func(t *testing.T) {
				check(t, append([]string{cmd}, expand(tt.args)...), tt.want, tt.code)
			})
		}
	}
	// One command's own flags.
	single := []struct {
		name string
		args []string
		want string
	}{
		{"sweep --iterations 2^63-1", []string{"sweep", "@good", "--iterations", "9223372036854775807"}, "--iterations 9223372036854775807: out of range: must be 1 to 100"},
		{"sweep --levels 1e9", []string{"sweep", "@good", "--levels", "80,1e9"}, "level 1e+09%: out of range: a level must be a positive percentage, at most 10000%"},
		{"run --timeseries-interval 2000000h", []string{"run", "@good", "--timeseries-interval", "2000000h"}, "--timeseries-interval 2000000h0m0s: out of range: must be 100ms to 24h0m0s (or 0: chosen from the window)"},
		{"run --timeseries-interval=-1s", []string{"run", "@good", "--timeseries-interval=-1s"}, "--timeseries-interval -1s: out of range: must be 100ms to 24h0m0s (or 0: chosen from the window)"},
		{"run --timeseries-interval 1ns", []string{"run", "@good", "--timeseries-interval", "1ns"}, "--timeseries-interval 1ns: out of range"},
		{"run --start-at 9999", []string{"run", "@good", "--start-at", "9999-01-01T00:00:00Z"}, "--start-at 9999-01-01T00:00:00Z is "},
		{"run --start-at 1970", []string{"run", "@good", "--start-at", "1970-01-01T00:00:00Z"}, "must be within 24h0m0s of now (--force-start-at accepts it)"},
		{"run --start-at tomorrow", []string{"run", "@good", "--start-at", "tomorrow"}, "--start-at \"tomorrow\": want an RFC 3339 time such as 20"},
		{"sink --listen ''", []string{"sink", "--listen", ""}, "--listen \"\": want HOST:PORT"},
		{"sink --listen :2526", []string{"sink", "--listen", ":2526"}, "--listen \":2526\": names no host, which would listen on every interface"},
		{"sink --max-recipients -1", []string{"sink", "--max-recipients=-1"}, "--max-recipients -1: out of range: must be 1 to 1000000"},
		{"sink --max-connections -1", []string{"sink", "--max-connections=-1"}, "--max-connections -1: out of range: must be 1 to 10000000"},
		{"sink --max-message-bytes -1", []string{"sink", "--max-message-bytes=-1"}, "--max-message-bytes -1: out of range: must be 1 to 1099511627776"},
		{"sink --every -1s", []string{"sink", "--every=-1s"}, "--every -1s: out of range: must be 100ms to 24h0m0s"},
		{"sink --every 0", []string{"sink", "--every", "0"}, "--every 0s: out of range"},
	}
	for _, tt := range single {
		t.Run(tt.name, func(t *testing.T) {
			check(t, expand(tt.args), tt.want, exitUsage)
		})
	}
	for _, cores := range []string{"-1", "5000"} {
		t.Run("sink --cores "+cores, func(t *testing.T) {
			check(t, []string{"sink", "--listen", "127.0.0.1:0", "--cores=" + cores}, "--cores "+cores+": out of range: must be 0 (all) to 4096", exitUsage)
		})
	}
}

// TestHostileReports: merges that would count a run twice, mix runs of
// different configs or windows, or hide a partial run.
func TestHostileReports(t *testing.T) {
	shard := func(k int) func(*report.Run) {
		return func(r *report.Run) { r.Name, r.Started = "gen", r.Started.Add(time.Duration(k)*time.Second) }
	}
	a, _ := writeReport(t, "a", 200, 10*time.Millisecond, shard(0))
	b, _ := writeReport(t, "b", 200, 10*time.Millisecond, shard(1))
	copyOfA := filepath.Join(t.TempDir(), "copy-of-a.json")
	if data, err := os.ReadFile(a); err != nil || os.WriteFile(copyOfA, data, 0o600) != nil {
		t.Fatal(err)
	}
	other, _ := writeReport(t, "other", 200, 10*time.Millisecond, shard(2), func(r *report.Run) { r.Config = "other.toml" })
	later, _ := writeReport(t, "later", 200, 10*time.Millisecond, shard(3600))
	longer, _ := writeReport(t, "longer", 200, 10*time.Millisecond, shard(3), func(r *report.Run) { r.Measurement = report.Duration(2 * time.Minute) })
	partial, _ := writeReport(t, "partial", 200, 10*time.Millisecond, shard(4), func(r *report.Run) { r.Partial, r.PartialReason = true, "interrupted" })
	cnr, _ := writeReport(t, "cnr", 200, 10*time.Millisecond, shard(5), func(r *report.Run) { r.CouldNotRun = "the target refused every connection" })
	tests := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"report a.json a.json", []string{a, a}, "merge: " + a + " and " + a + " are the same run (\"gen\", started 2026-03-01T10:00:00Z, seed 1): merged, its operations would count twice", exitUsage},
		{"report a.json copy-of-a.json", []string{a, copyOfA}, "are the same run", exitUsage},
		{"the same run twice, --force", []string{a, b, a, "--force"}, "merge: " + a + " and " + a + " are the same run", exitUsage},
		{"different configs", []string{a, other}, "ran different configs: not shards of one run (--force merges them anyway)", exitUsage},
		{"different windows", []string{a, later}, "start 1h0m0s apart, more than 10% of the measurement (1m0s): not shards of one run (--force merges them anyway)", exitUsage},
		{"different phases", []string{a, longer}, "have different phases: not shards of one run", exitUsage},
		{"different configs, --force", []string{a, other, "--force"}, "", exitCompliant},
		{"partial merged with complete", []string{a, partial}, "the report is partial", exitRunFailed},
		{"partial alone", []string{partial}, "the report is partial", exitRunFailed},
		{"could not run", []string{cnr}, "no result for the server: could not run", exitRunFailed},
		{"shards", []string{a, b}, "", exitCompliant},
		{"--force with --side-by-side", []string{a, b, "--side-by-side", "--force"}, "--force forces a merge", exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"report"}, tt.args...)
			code, stdout, stderr := runMain(args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("%v: exit %d (want %d), stderr lacks %q:\n%s\nstdout:\n%s", args, code, tt.code, tt.want, stderr, stdout)
			}
		})
	}
	// A partial merge says so in its table.
	if _, stdout, _ := runMain("report", a, partial); !strings.Contains(stdout, "PARTIAL") {
		t.Errorf("the merged report does not show PARTIAL:\n%s", stdout)
	}
}
