// Package layout holds the test that keeps mailbench's imports running
// downhill along the data flow
//
//	config → plan → schedule → sessions → observations → compliance → report
//
// (docs/architecture.md). Every package has a stage, read from the folder
// it is in; a package may import packages of its own stage or of earlier
// ones, never of a later one.
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

// stages are the data flow's stages in order, each with the folders that
// hold it. A package's stage is read from its path: that of the longest
// folder below that is a prefix of it (internal/run/schedule is stage 2,
// every other package under internal/run stage 4), so a new package in a
// stage's folder needs no entry here; a package under none fails
// TestImportsRunDownhill.
var stages = []struct {
	name    string
	folders []string
}{
	// vocabulary: names, records and leaf libraries every stage may use;
	// delivery accounting (the records, the ledger, the reconciliation),
	// which the sink, the readers and the report share; the vendored, patched go-imap and go-smtp.
	{"vocabulary", []string{"measure", "delivery", "configs", "internal/lib", "internal/goimap", "internal/gosmtp"}},
	// the workload's definition: config model, plan, population, mailboxes.
	{"definition", []string{"workload", "internal/mailboxes"}},
	// when sessions start.
	{"schedule", []string{"internal/run/schedule"}},
	// what reaches a server: the protocol clients, their settings, TLS and
	// the namespace; the sink; the demo target.
	{"endpoints", []string{"imapclient", "smtpclient", "smtpsink", "internal/endpoints", "internal/demo"}},
	// sessions, long-lived clients, the IMAP watchers and checkers of
	// deliveries, and init's mailbox filling that uses the same clients.
	{"sessions", []string{"internal/run"}},
	// observations: metrics, the server's own figures, the live Prometheus
	// endpoint.
	{"observations", []string{"metrics", "internal/observe"}},
	{"verdict", []string{"compliance"}},
	// the report, and the live status line that shows a run going.
	{"report", []string{"report", "internal/status"}},
	// what carries out runs: one run, across generators, then the campaigns
	// of runs and their resumption.
	{"orchestration", []string{"internal/orchestrate", "internal/campaign"}},
	// programs and tests of the whole. (deploy/kubernetes, the manifests and
	// their test, is a module of its own: Kubernetes' API types are no
	// requirement of mailbench's.)
	{"programs", []string{"cmd", "bench", "integration", "internal/layout"}},
}

// testHelpers is the folder of the packages only tests import
// (TestHelpersOnlyInTests): outside the data flow, they may import any
// stage.
const testHelpers = "internal/testing"

// stageOf is the index in stages of the package at path name (relative to
// the module), from the longest stage folder that holds it.
func stageOf(name string) (int, bool) {
	best, bestLen := -1, -1
	for i, s := range stages {
		for _, f := range s.folders {
			if (name == f || strings.HasPrefix(name, f+"/")) && len(f) > bestLen {
				best, bestLen = i, len(f)
			}
		}
	}
	return best, best >= 0
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
	"report":     "a run's result: the model, its JSON, merge and evaluation; report/render draws it as text, HTML and side by side",
	"delivery":   "delivery accounting, protocol-free: the message id, the records, the ledger, reconciliation, pending remote deliveries, the sink's record",
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
		if name == testHelpers || strings.HasPrefix(name, testHelpers+"/") {
			continue
		}
		from, ok := stageOf(name)
		if !ok {
			t.Errorf("package %s is in no stage's folder: move it into one, or give its folder a stage here (and in docs/architecture.md)", name)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			to, ok := stageOf(dep)
			if ok && to > from {
				t.Errorf("%s (stage %s) imports %s (stage %s): imports must run downhill", name, stages[from].name, dep, stages[to].name)
			}
		}
	}
}

// TestStagesKnowOnlyRealFolders keeps the table honest: a stage folder
// that holds no package is a stale entry.
func TestStagesKnowOnlyRealFolders(t *testing.T) {
	var names []string
	for _, p := range listPackages(t) {
		names = append(names, strings.TrimPrefix(p.ImportPath, module))
	}
	for _, s := range stages {
		for _, f := range s.folders {
			if !slices.ContainsFunc(names, func(n string) bool { return n == f || strings.HasPrefix(n, f+"/") }) {
				t.Errorf("stage %s names folder %s, which holds no package", s.name, f)
			}
		}
	}
}

// TestHelpersOnlyInTests: the packages under internal/testing are imported
// by tests only (and by each other), never by code that ships.
func TestHelpersOnlyInTests(t *testing.T) {
	for _, p := range listPackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		if strings.HasPrefix(name, testHelpers+"/") {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+testHelpers+"/") {
				t.Errorf("%s imports the test helper %s outside its tests", name, imp)
			}
		}
	}
}

// TestNoOneChildFolders: a folder that holds no package of its own holds
// more than one (a folder with one child is a path longer than its
// content). cmd/ and internal/ are Go's conventions, not groupings: a
// folder of those names says what it is with one child.
func TestNoOneChildFolders(t *testing.T) {
	children := map[string]int{}
	isPkg := map[string]bool{}
	for _, p := range listPackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		isPkg[name] = true
		if dir := filepath.Dir(name); dir != "." {
			children[dir]++
		}
	}
	for dir, n := range children {
		if base := filepath.Base(dir); base == "cmd" || base == "internal" {
			continue
		}
		if n == 1 && !isPkg[dir] && !strings.HasPrefix(dir, "internal/goimap") && !strings.HasPrefix(dir, "internal/gosmtp") {
			t.Errorf("folder %s holds one package and nothing else: move it up", dir)
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
	module + "internal/endpoints", module + "internal/observe/", module + "internal/run/",
}

// TestReportNeedsNoProtocol: the report model and its renderers (and the
// delivery data they hold) depend on no protocol code, so that a program
// that reads, merges or renders reports links no IMAP or SMTP stack.
func TestReportNeedsNoProtocol(t *testing.T) {
	for _, pkg := range []string{"report", "report/render", "delivery", "compliance", "metrics"} {
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

// TestNoBuildOutputTracked: no executable and no file over 1 MiB is in the
// tree. A `go build ./bench/x` without -o writes its binary at the root,
// and one was committed once (9 MB of ELF, found a commit later).
func TestNoBuildOutputTracked(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "-z").Output()
	if err != nil {
		t.Skip("no git: ", err)
	}
	magics := [][]byte{{0x7f, 'E', 'L', 'F'}, {0xcf, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}}
	for name := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(filepath.Join("../..", name))
		if err != nil {
			continue // deleted in the work tree, not yet in the index
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		st, err := f.Stat()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range magics {
			if n == 4 && string(head) == string(m) {
				t.Errorf("%s is an executable: build outputs stay out of the tree (go build -o elsewhere, or .gitignore)", name)
			}
		}
		if st.Size() > 1<<20 {
			t.Errorf("%s is %d bytes: over 1 MiB, too big for the tree", name, st.Size())
		}
	}
}
