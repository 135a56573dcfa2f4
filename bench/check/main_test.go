package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

const mod = "github.com/mailbench/mailbench/"

func readResults(t *testing.T) []Result {
	t.Helper()
	f, err := os.Open("testdata/output.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := ParseResults(f)
	if err != nil {
		t.Fatalf("ParseResults: %v", err)
	}
	return rs
}

func readTargets(t *testing.T) []Target {
	t.Helper()
	f, err := os.Open("testdata/targets.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, err := ParseTargets(f)
	if err != nil {
		t.Fatalf("ParseTargets: %v", err)
	}
	return ts
}

func TestParseResults(t *testing.T) {
	rs := readResults(t)
	type want struct {
		key    string
		n      int64
		metric string
		value  float64
	}
	wants := []want{
		{mod + "compliance.BenchmarkObserve", 5000000, "ns/op", 240.5},
		{mod + "ledger.BenchmarkLedgerAccepted", 3000000, "MiB/1e6msgs", 27.5},
		{mod + "ledger.BenchmarkLedgerAccepted", 3000000, "ns/op", 310},
		{mod + "ledger.BenchmarkLedgerAccepted", 3000000, "B/op", 48},
		{mod + "ledger.BenchmarkSplit", 20, "ns/op", 50000000},
		{mod + "ledger.BenchmarkSub/small", 1000, "ns/op", 1000},
		{mod + "ledger.BenchmarkSub/large", 100, "ns/op", 20000},
	}
	if len(rs) != 7 {
		t.Fatalf("parsed %d results, want 7: %+v", len(rs), rs)
	}
	for _, w := range wants {
		found := false
		for _, r := range rs {
			if r.Key() == w.key && r.N == w.n && r.Metrics[w.metric] == w.value {
				found = true
			}
		}
		if !found {
			t.Errorf("no result %s N=%d %v %s", w.key, w.n, w.value, w.metric)
		}
	}
}

func TestParseResultsNoPackage(t *testing.T) {
	rs, err := ParseResults(strings.NewReader("BenchmarkX-16 \t 10\t 5 ns/op\nBenchmarkY 3 1.5 ns/op\nBenchmarkZ-2 notanumber ns/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Key() != "BenchmarkX" || rs[1].Key() != "BenchmarkY" || rs[1].Metrics["ns/op"] != 1.5 {
		t.Fatalf("ParseResults = %+v, want BenchmarkX and BenchmarkY", rs)
	}
}

func TestParseTargetsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, errPart string
	}{
		{"too few fields", "BenchmarkX ns/op\n", "line 1"},
		{"too many fields", "# c\n\nBenchmarkX ns/op 1 2\n", "line 3"},
		{"bad regex", "Benchmark( ns/op 1\n", "line 1"},
		{"bad max", "BenchmarkX ns/op fast\n", "not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTargets(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Fatalf("ParseTargets(%q) error = %v, want one mentioning %q", tc.in, err, tc.errPart)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	vs := Check(readTargets(t), readResults(t))
	type want struct {
		line  int // targets file line
		key   string
		pass  bool
		value float64
	}
	wants := []want{
		{2, mod + "compliance.BenchmarkObserve", true, 240.5},
		{3, mod + "compliance.BenchmarkObserve", true, 0},      // 0 <= 0: the maximum passes
		{4, mod + "ledger.BenchmarkLedgerAccepted", true, 350}, // median of 350, 310, 900 (the mean would fail)
		{5, mod + "ledger.BenchmarkLedgerAccepted", false, 27.5},
		{6, mod + "ledger.BenchmarkSplit", true, 50000000},
		{7, mod + "ledger.BenchmarkSub/small", true, 1000},
		{7, mod + "ledger.BenchmarkSub/large", false, 20000},
		{8, "", false, 0}, // matches nothing
		{9, "", false, 0}, // metric not reported
	}
	if len(vs) != len(wants) {
		t.Fatalf("Check returned %d verdicts, want %d: %+v", len(vs), len(wants), vs)
	}
	for i, w := range wants {
		v := vs[i]
		if v.Target.Line != w.line || v.Key != w.key || v.Pass != w.pass || v.Value != w.value {
			t.Errorf("verdict %d = line %d %q pass=%v value=%v; want line %d %q pass=%v value=%v",
				i, v.Target.Line, v.Key, v.Pass, v.Value, w.line, w.key, w.pass, w.value)
		}
		if v.Pass != (v.Reason == "") {
			t.Errorf("verdict %d: pass=%v with reason %q", i, v.Pass, v.Reason)
		}
	}
}

func TestWriteVerdictsGolden(t *testing.T) {
	var buf bytes.Buffer
	failed := WriteVerdicts(&buf, Check(readTargets(t), readResults(t)))
	if failed != 4 {
		t.Errorf("WriteVerdicts reported %d failures, want 4", failed)
	}
	golden := filepath.Join("testdata", "verdicts.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("output differs from %s:\n%s", golden, buf.String())
	}
}

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out, err := os.ReadFile("testdata/output.txt")
	if err != nil {
		t.Fatal(err)
	}
	outPath := write("out.txt", string(out))
	for _, tc := range []struct {
		name, targets string
		stdin         bool
		onlyRun       bool
		want          int
	}{
		{"all pass", "compliance\\.BenchmarkObserve$ ns/op 500\nBenchmarkSub/small ns/op 1000\n", false, false, 0},
		{"all pass from stdin", "compliance\\.BenchmarkObserve$ B/op 0\n", true, false, 0},
		{"one fails", "compliance\\.BenchmarkObserve$ ns/op 500\ncompliance\\.BenchmarkObserve$ ns/op 200\n", false, false, 1},
		{"missing benchmark fails", "BenchmarkNope ns/op 1e9\n", false, false, 1},
		{"malformed targets", "BenchmarkX ns/op\n", false, false, 2},
		{"no targets", "# only a comment\n\n", false, false, 2},
		// -only-run: a subset run checks the targets of what ran only.
		{"only-run skips a benchmark that did not run", "compliance\\.BenchmarkObserve$ ns/op 500\nBenchmarkNope ns/op 1e9\n", false, true, 0},
		{"only-run still fails what ran", "compliance\\.BenchmarkObserve$ ns/op 200\nBenchmarkNope ns/op 1e9\n", false, true, 1},
		{"only-run still fails a missing metric", "compliance\\.BenchmarkObserve$ frobs/op 1\n", false, true, 1},
		{"only-run with nothing that ran", "BenchmarkNope ns/op 1e9\n", false, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := write("targets.txt", tc.targets)
			var stdout, stderr bytes.Buffer
			var inputs []string
			var stdin *bytes.Reader
			if tc.stdin {
				stdin = bytes.NewReader(out)
			} else {
				inputs = []string{outPath}
				stdin = bytes.NewReader(nil)
			}
			if got := run(tp, tc.onlyRun, inputs, stdin, &stdout, &stderr); got != tc.want {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.want, stdout.String(), stderr.String())
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if got := run(filepath.Join(dir, "absent.txt"), false, nil, strings.NewReader(""), &stdout, &stderr); got != 2 {
		t.Errorf("missing targets file: exit %d, want 2", got)
	}
}

// FuzzParseResults checks that arbitrary output never panics and that every
// result it yields has a positive count, a metric and a benchmark name.
func FuzzParseResults(f *testing.F) {
	data, err := os.ReadFile("testdata/output.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add("BenchmarkX-2\n 5 1 ns/op\n")
	f.Add("pkg: p\nBenchmarkX 1 NaN ns/op 2 x\n")
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseResults(strings.NewReader(s))
		if err != nil {
			return // e.g. a line longer than the scanner's buffer
		}
		for _, r := range rs {
			if r.N <= 0 || len(r.Metrics) == 0 || !strings.HasPrefix(r.Name, "Benchmark") {
				t.Fatalf("bad result %+v from %q", r, s)
			}
		}
	})
}
