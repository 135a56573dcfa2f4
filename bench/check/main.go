// Command check compares the output of `go test -bench` with the speed and
// memory targets of bench/targets.txt, prints PASS or FAIL per target and
// benchmark, and exits 1 when any target fails (2 on a usage or parse error).
//
//	go run ./bench/check -targets bench/targets.txt bench/out/2026-01-02.txt
//	go test -run '^$' -bench . -benchmem ./... | go run ./bench/check
//
// A target line is "REGEX METRIC MAX": REGEX is matched (unanchored) against
// "<package path>.<benchmark name>" with the -GOMAXPROCS suffix removed, e.g.
// "github.com/mailbench/mailbench/compliance.BenchmarkObserve"; METRIC is a
// unit of the result line (ns/op, B/op, allocs/op, or a custom unit reported
// with b.ReportMetric); MAX is the largest value that passes. Every
// benchmark the regex matches must report METRIC at most MAX; with -count > 1
// the median of its runs is compared. A target that matches no result, or
// whose benchmarks don't report METRIC, fails: a target that didn't run is
// not a pass. Blank lines and lines starting with # are ignored; a file
// without targets is an error.
//
// check doesn't perform I/O beyond reading its inputs and writing stdout.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	targetsPath := flag.String("targets", "bench/targets.txt", "targets file")
	onlyRun := flag.Bool("only-run", false, "check only the targets of benchmarks that ran (a subset run, e.g. CI's quick one); a benchmark that ran still fails a target whose metric it lacks")
	flag.Parse()
	os.Exit(run(*targetsPath, *onlyRun, flag.Args(), os.Stdin, os.Stdout, os.Stderr))
}

// run does the work of main and returns the exit code.
func run(targetsPath string, onlyRun bool, inputs []string, stdin io.Reader, stdout, stderr io.Writer) int {
	tf, err := os.Open(targetsPath)
	if err != nil {
		fmt.Fprintln(stderr, "check:", err)
		return 2
	}
	targets, err := ParseTargets(tf)
	tf.Close()
	if err != nil {
		fmt.Fprintf(stderr, "check: %s: %v\n", targetsPath, err)
		return 2
	}
	if len(targets) == 0 {
		fmt.Fprintf(stderr, "check: %s: no targets\n", targetsPath)
		return 2
	}
	var results []Result
	if len(inputs) == 0 {
		results, err = ParseResults(stdin)
		if err != nil {
			fmt.Fprintln(stderr, "check: stdin:", err)
			return 2
		}
	}
	for _, p := range inputs {
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintln(stderr, "check:", err)
			return 2
		}
		rs, err := ParseResults(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "check: %s: %v\n", p, err)
			return 2
		}
		results = append(results, rs...)
	}
	if onlyRun {
		targets = TargetsOfRun(targets, results)
		if len(targets) == 0 {
			fmt.Fprintln(stderr, "check: no target names a benchmark that ran")
			return 2
		}
	}
	verdicts := Check(targets, results)
	failed := WriteVerdicts(stdout, verdicts)
	if failed > 0 {
		return 1
	}
	return 0
}

// TargetsOfRun returns the targets whose name matches at least one result,
// whatever its metrics: the targets of the benchmarks that ran.
func TargetsOfRun(targets []Target, results []Result) []Target {
	var out []Target
	for _, t := range targets {
		for _, r := range results {
			if t.Name.MatchString(r.Key()) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// Target is one line of the targets file.
type Target struct {
	Line   int            // line number in the targets file
	Name   *regexp.Regexp // matched against Result.Key
	Metric string         // unit, e.g. "ns/op" or "MiB/1e6msgs"
	Max    float64        // largest passing value
}

// ParseTargets reads a targets file. It reports the first malformed line.
func ParseTargets(r io.Reader) ([]Target, error) {
	var out []Target
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want \"REGEX METRIC MAX\", got %d fields", n, len(f))
		}
		re, err := regexp.Compile(f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		max, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: maximum %q is not a number", n, f[2])
		}
		out = append(out, Target{Line: n, Name: re, Metric: f[1], Max: max})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Result is one benchmark result line.
type Result struct {
	Package string             // from the preceding "pkg:" line; "" if none
	Name    string             // e.g. "BenchmarkObserve" or "BenchmarkX/sub", GOMAXPROCS suffix removed
	N       int64              // iterations
	Metrics map[string]float64 // unit → value
}

// Key is what target regexes are matched against: "<package>.<name>", or
// the name alone when the package is unknown.
func (r Result) Key() string {
	if r.Package == "" {
		return r.Name
	}
	return r.Package + "." + r.Name
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// ParseResults extracts the benchmark results from go test -bench output.
// Other lines (logs, PASS, ok) are skipped. A result whose name and numbers
// were split by output printed while it ran is joined up again.
func ParseResults(r io.Reader) ([]Result, error) {
	var out []Result
	pkg, pending := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg, pending = strings.TrimSpace(p), ""
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name := ""
		if strings.HasPrefix(f[0], "Benchmark") {
			name, f = f[0], f[1:]
			if len(f) == 0 {
				pending = name // numbers follow on a later line
				continue
			}
		} else if pending != "" {
			name = pending
		} else {
			continue
		}
		res, ok := parseNumbers(f)
		if !ok {
			continue // e.g. a log line; keep waiting for the numbers
		}
		pending = ""
		res.Package = pkg
		res.Name = procsSuffix.ReplaceAllString(name, "")
		out = append(out, res)
	}
	return out, sc.Err()
}

// parseNumbers parses "N v1 unit1 v2 unit2 ..." into a Result.
func parseNumbers(f []string) (Result, bool) {
	if len(f) < 3 || len(f)%2 != 1 {
		return Result{}, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n <= 0 {
		return Result{}, false
	}
	res := Result{N: n, Metrics: map[string]float64{}}
	for i := 1; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false
		}
		res.Metrics[f[i+1]] = v
	}
	return res, true
}

// Verdict is the outcome of one target for one benchmark (or for none, when
// nothing matched).
type Verdict struct {
	Target Target
	Key    string  // benchmark checked; "" when none matched
	Value  float64 // median over the benchmark's runs
	Runs   int     // results that reported the metric
	Pass   bool
	Reason string // why it failed, "" on pass
}

// Check evaluates every target against results. It doesn't perform I/O.
func Check(targets []Target, results []Result) []Verdict {
	var out []Verdict
	for _, t := range targets {
		values := map[string][]float64{}
		var keys []string
		matched := false
		for _, r := range results {
			k := r.Key()
			if !t.Name.MatchString(k) {
				continue
			}
			matched = true
			v, ok := r.Metrics[t.Metric]
			if !ok {
				continue
			}
			if _, seen := values[k]; !seen {
				keys = append(keys, k)
			}
			values[k] = append(values[k], v)
		}
		switch {
		case !matched:
			out = append(out, Verdict{Target: t, Reason: "no benchmark result matches"})
			continue
		case len(keys) == 0:
			out = append(out, Verdict{Target: t, Reason: "matching benchmarks don't report " + t.Metric})
			continue
		}
		for _, k := range keys {
			m := median(values[k])
			v := Verdict{Target: t, Key: k, Value: m, Runs: len(values[k]), Pass: m <= t.Max}
			if !v.Pass {
				v.Reason = "above the maximum"
			}
			out = append(out, v)
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteVerdicts prints one line per verdict and a summary, and returns the
// number of failures.
func WriteVerdicts(w io.Writer, vs []Verdict) int {
	failed := 0
	for _, v := range vs {
		status := "PASS"
		if !v.Pass {
			status = "FAIL"
			failed++
		}
		key := v.Key
		if key == "" {
			key = v.Target.Name.String()
		}
		value, cmp := "-", "<="
		if v.Runs > 0 {
			value = formatValue(v.Value)
			if !v.Pass {
				cmp = "> "
			}
		}
		line := fmt.Sprintf("%s  %-52s %-12s %12s %s %-12s", status, shortKey(key), v.Target.Metric, value, cmp, formatValue(v.Target.Max))
		if v.Reason != "" {
			line += "  (" + v.Reason + ", targets line " + strconv.Itoa(v.Target.Line) + ")"
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(w, "%d checks: %d passed, %d failed\n", len(vs), len(vs)-failed, failed)
	return failed
}

// shortKey drops the module path, leaving "package.Benchmark".
func shortKey(k string) string {
	return strings.TrimPrefix(k, "github.com/mailbench/mailbench/")
}

// formatValue prints whole numbers in full (12000000, not 1.2e+07).
func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}
