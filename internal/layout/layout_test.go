// Package layout holds the test that keeps mailbench's imports running
// downhill along the data flow
//
//	config → plan → schedule → sessions → observations → compliance → report
//
// (docs/architecture.md). Every package has a stage; a package may import
// packages of its own stage or of earlier ones, never of a later one. A new
// package fails this test until it is given a stage here.
package layout

import (
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mailbench/mailbench/"

// stage of every package, in data-flow order.
var stage = map[string]int{
	// 0: vocabulary and leaf libraries every stage may use.
	"measure": 0, "configs": 0, "internal/msgsum": 0, "internal/message": 0,
	// delivery accounting as data, which the sink, the ledger and the
	// report share.
	"delivery": 0,
	// 1: the workload's definition: config model, plan, population.
	"workload": 1, "internal/mailboxes": 1,
	// 2: when sessions start.
	"internal/run/schedule": 2,
	// 3: the protocol endpoints sessions talk through, and the demo target.
	"imapclient": 3, "smtpclient": 3, "internal/tlsconf": 3, "smtpsink": 3, "internal/demo": 3,
	// 4: sessions, and init's mailbox filling that uses the same clients.
	"internal/run/session": 4, "internal/run/connected": 4, "internal/populate": 4,
	// 5: observations: metrics, delivery accounting and its IMAP checkers.
	"metrics": 5, "internal/delivery/ledger": 5, "internal/delivery/inboxcheck": 5, "internal/delivery/idlewatch": 5, "internal/promexport": 5, "internal/serverwatch": 5,
	// 6: the verdict.
	"compliance": 6,
	// 7: the report, and the live status line that shows a run going.
	"report": 7, "internal/status": 7,
	// 8: what carries out runs: one run, then the campaigns of runs (TLS
	// variants, load sweeps, certification, sizing) and their resumption.
	"internal/run/orchestrator": 8, "internal/run/manager": 8, "internal/campaign": 8, "internal/campaign/tlscompare": 8, "internal/campaign/sweep": 8, "internal/campaign/certify": 8, "internal/campaign/sizing": 8, "internal/resume": 8,
	// 9: programs and tests of the whole.
	"cmd/mailbench": 9, "bench/check": 9, "bench/sink": 9, "bench/soak": 9, "bench/target": 9, "bench/imapcost": 9, "bench/idle": 9, "bench/submit": 9, "bench/hostile": 9, "bench/slowloris": 9, "bench/internal/benchutil": 9, "integration": 9,
	// (deploy/kubernetes, the manifests and their test, is a module of its
	// own: Kubernetes' API types are no requirement of mailbench's.)
	// Helpers (internal) of every stage, and test helpers only tests import.
	"internal/testcert": 0, "internal/testutil": 0, "internal/memnet": 0, "internal/version": 0, "internal/runtimetune": 0, "internal/testconfig": 1, "internal/layout": 9, "internal/docjson": 0, "internal/atomicfile": 0, "internal/quickack": 0, "internal/tomlstrict": 0, "internal/host": 0, "internal/ctxsleep": 0, "internal/textfit": 0,
}

// api are the packages at the root of the tree, the names users know and
// what is meant as library API (docs/architecture.md, "Library API").
// Everything else lives under internal/, grouped by stage.
var api = map[string]string{
	"workload":   "the workload's definition: config model, plan, users, sessions",
	"imapclient": "an IMAP client with a deadline on every operation, timed per function",
	"smtpclient": "an SMTP submission client with a deadline on every operation, timed",
	"smtpsink":   "the SMTP sink that captures, times and reconciles relayed mail",
	"measure":    "the vocabulary of timed functions, observations and error classes",
	"metrics":    "per-function HDR histograms and counters, and their time series",
	"compliance": "the compliance rules and the verdict over a run's figures",
	"report":     "a run's result: the model, its JSON, merge, text, HTML and side-by-side",
	"delivery":   "delivery accounting as data: reconciliation, pending remote deliveries, the sink's record",
	"configs":    "the shipped workload files",
}

// otherRoot are the folders at the root that hold no library package.
var otherRoot = map[string]string{
	"cmd": "the mailbench command", "internal": "everything else, by stage",
	"bench": "benchmarks and their scripts", "integration": "tests against real servers",
	"deploy": "Kubernetes manifests", "docs": "documentation", "scripts": "set-up of the servers under test, fuzzing, releases",
}

// TestRootHoldsOnlyAPI fails when a folder appears at the root of the tree
// that is not listed in api: a new package goes under internal/, or is
// added to the library API on purpose (here and in docs/architecture.md).
func TestRootHoldsOnlyAPI(t *testing.T) {
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	tracked := trackedRootFolders(t)
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || !tracked[name] {
			continue
		}
		if _, ok := api[name]; !ok && otherRoot[name] == "" {
			t.Errorf("%s/ at the root is not in the library API list: move it under internal/ (by stage), or list it in api and docs/architecture.md", name)
		}
	}
	for _, list := range []map[string]string{api, otherRoot} {
		for name := range list {
			if !tracked[name] {
				t.Errorf("the root's list names %s, which is no folder at the root", name)
			}
		}
	}
}

// trackedRootFolders are the root folders git knows of (a local build
// output or scratch folder is not part of the tree); without git, every
// folder.
func trackedRootFolders(t *testing.T) map[string]bool {
	out, err := exec.Command("git", "-C", "../..", "ls-files").Output()
	folders := map[string]bool{}
	if err != nil {
		entries, _ := os.ReadDir("../..")
		for _, e := range entries {
			if e.IsDir() {
				folders[e.Name()] = true
			}
		}
		return folders
	}
	for _, f := range strings.Split(string(out), "\n") {
		if dir, _, ok := strings.Cut(f, "/"); ok {
			folders[dir] = true
		}
	}
	return folders
}

// vendored are the libraries mailbench carries patched copies of
// (NOTICE.md): every package under them is a leaf library, stage 0.
var vendored = []string{"internal/goimap", "internal/gosmtp"}

// stageOf is name's stage: its own, or that of the vendored library it is in.
func stageOf(name string) (int, bool) {
	for _, v := range vendored {
		if name == v || strings.HasPrefix(name, v+"/") {
			return 0, true
		}
	}
	s, ok := stage[name]
	return s, ok
}

// TestNoReplaceDirectives: go.mod has no replace directive, so that `go
// install …/cmd/mailbench@version` works and a program importing mailbench
// builds the code its tests ran (golang/go#44840); what mailbench patches
// lives in its own module (vendored).
func TestNoReplaceDirectives(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "replace" || strings.HasPrefix(f[0], "replace(")) {
			t.Errorf("go.mod:%d: %s: a replace directive breaks go install and library users; vendor the patched code under internal/ instead", i+1, strings.TrimSpace(line))
		}
	}
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, "list", "-json=ImportPath,Imports", module+"...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportsRunDownhill fails on any import from a later stage, and on a
// package that has no stage.
func TestImportsRunDownhill(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: not the mailbench module?", len(pkgs))
	}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		from, ok := stageOf(name)
		if !ok {
			t.Errorf("package %s has no stage: add it to the stage map (and docs/architecture.md)", name)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			to, ok := stageOf(dep)
			if ok && to > from {
				t.Errorf("%s (stage %d) imports %s (stage %d): imports must run downhill", name, from, dep, to)
			}
		}
	}
}

// TestStagesKnowOnlyRealPackages keeps the map honest: a stage for a package
// that no longer exists is a stale map.
func TestStagesKnowOnlyRealPackages(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		seen[strings.TrimPrefix(p.ImportPath, module)] = true
	}
	for name := range stage {
		if !seen[name] {
			t.Errorf("stage map names %s, which is not a package", name)
		}
	}
}

// TestAPIHasExamples: every library package at the root shows its use in
// an Example function (go doc and pkg.go.dev list them).
func TestAPIHasExamples(t *testing.T) {
	for name := range api {
		files, _ := filepath.Glob(filepath.Join("../..", name, "*_test.go"))
		found := false
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "\nfunc Example") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("library package %s has no Example function in its tests", name)
		}
	}
}

// protocolCode are the packages that speak IMAP or SMTP, or run the
// machinery that does: reading a report must link none of them.
var protocolCode = []string{
	"github.com/emersion/", module + "internal/goimap", module + "internal/gosmtp",
	module + "imapclient", module + "smtpclient", module + "smtpsink", module + "internal/demo",
	module + "internal/delivery/", module + "internal/run/",
}

// TestReportNeedsNoProtocol: the report model and its renderers (and the
// delivery data they hold) depend on no protocol code, so that a program
// that reads, merges or renders reports links no IMAP or SMTP stack.
func TestReportNeedsNoProtocol(t *testing.T) {
	for _, pkg := range []string{"report", "delivery", "compliance", "metrics"} {
		out, err := exec.Command("go", "list", "-deps", "../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, p := range protocolCode {
				if strings.HasPrefix(dep, p) {
					t.Errorf("%s depends on %s: the result model must not link protocol code", pkg, dep)
				}
			}
		}
	}
}

// TestPackageDocs: every package says what it is in one package comment
// that names it ("// Package <name> ..."; a program: "// Command ..."),
// and no file's comment above its package clause names another package.
// The vendored go-imap and go-smtp keep upstream's comments.
func TestPackageDocs(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{.Dir}} {{join .GoFiles \",\"}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		path, name, dir, files := strings.TrimPrefix(f[0], module), f[1], f[2], strings.Split(f[3], ",")
		if strings.HasPrefix(path, "internal/goimap") || strings.HasPrefix(path, "internal/gosmtp") {
			continue
		}
		want := "Package " + name + " "
		if name == "main" {
			want = "Command "
		}
		documented := false
		for _, file := range files {
			doc := packageComment(t, filepath.Join(dir, file))
			switch {
			case doc == "":
			case strings.HasPrefix(doc, want):
				documented = true
			case strings.HasPrefix(doc, "Package ") || strings.HasPrefix(doc, "Command "):
				t.Errorf("%s/%s: its package comment begins %q: this is package %s", path, file, firstWords(doc, 3), name)
			}
		}
		if !documented {
			t.Errorf("%s: no package comment beginning %q", path, want)
		}
	}
}

// packageComment is the comment directly above file's package clause ("":
// none).
func packageComment(t *testing.T, file string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		return ""
	}
	return f.Doc.Text()
}

func firstWords(s string, n int) string {
	w := strings.Fields(s)
	return strings.Join(w[:min(n, len(w))], " ")
}

// TestForkBehindItsWrappers: the vendored go-imap is reached only through
// imapclient (and by the embedded demo server, which is go-imap's server):
// no package of mailbench's imports it past the wrapper (tests may, for
// their scripted servers), so that no go-imap type crosses mailbench's API.
func TestForkBehindItsWrappers(t *testing.T) {
	allowed := []string{module + "imapclient", module + "internal/demo", module + "internal/goimap"}
	for _, p := range listPackages(t) {
		if slices.ContainsFunc(allowed, func(a string) bool { return p.ImportPath == a || strings.HasPrefix(p.ImportPath, a+"/") }) {
			continue
		}
		for _, imp := range p.Imports {
			if imp == module+"internal/goimap" || strings.HasPrefix(imp, module+"internal/goimap/") {
				t.Errorf("%s imports %s: go through imapclient", p.ImportPath, imp)
			}
		}
	}
}
