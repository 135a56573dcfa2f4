package render

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
)

// The browser test opens the HTML report in headless Chromium (Debian's
// chromium package). It is skipped when chromium is not on PATH, unless
// MAILBENCH_REQUIRE_BROWSER=1, when that is a failure. The pages and their
// screenshots are kept in $MAILBENCH_ARTIFACTS when set (else in the
// test's temporary directory, removed afterwards).

const browserTimeout = 60 * time.Second

// chromiumPath finds the browser or skips (fails when it is required).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "chromium is not on PATH (Debian: apt-get install -y chromium): the HTML report was not checked in a browser"
	if os.Getenv("MAILBENCH_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + ", and MAILBENCH_REQUIRE_BROWSER=1 requires it")
	}
	t.Skip(msg)
	return ""
}

func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MAILBENCH_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// chromium runs the headless browser on page with args; it returns stdout
// and fails the test on an error or a time-out.
func chromium(ctx context.Context, t *testing.T, bin, page string, args ...string) (stdout, stderr string) {
	t.Helper()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(),
		// The page must not need the network: no name resolves.
		"--host-resolver-rules=MAP * ~NOTFOUND",
		// Console messages on stderr, as ":CONSOLE:" lines.
		"--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=5000",
	}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v (context: %v)\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), errb.String())
	}
	return out.String(), errb.String()
}

var (
	reBody      = regexp.MustCompile(`<body([^>]*)>`)
	reAttr      = regexp.MustCompile(`\b(data-[a-z]+)="([^"]*)"`)
	reErrors    = regexp.MustCompile(`(?s)<pre id="mb-errors"([^>]*)>(.*?)</pre>`)
	reConsole   = regexp.MustCompile(`(?m)^.*:CONSOLE[:(].*$`)
	reCanvasTag = regexp.MustCompile(`<canvas [^>]*>`)
)

func TestHTMLInBrowser(t *testing.T) {
	bin := chromiumPath(t)
	dir := artifactDir(t)
	full := readFixture(t, filepath.Join("testdata", "html_full.json.golden"))
	failing := readFixture(t, filepath.Join("..", "testdata", "partial_failing.json.golden"))
	for _, tt := range []struct {
		name string
		runs []*report.Run
		opts HTMLOptions
	}{
		{"html-report-single", []*report.Run{full}, HTMLOptions{}},
		{"html-report-compare", []*report.Run{full, failing}, HTMLOptions{Labels: []string{"dovecot-2.3", ""}}},
		{"html-report-server", []*report.Run{withServer(readFixture(t, filepath.Join("testdata", "html_full.json.golden")))}, HTMLOptions{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
			defer cancel()
			page := filepath.Join(dir, tt.name+".html")
			var b bytes.Buffer
			if err := WriteHTML(&b, tt.runs, tt.opts); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}

			dom, stderr := chromium(ctx, t, bin, page, "--dump-dom")
			checkRenderedDOM(t, dom)
			// The charts a user reads at a glance: the limit and target
			// reference lines and the numbers of the sessions-by-type chart
			// are in the rendered page's chart data.
			for _, want := range []string{`"label":"limit (5 s)"`, `"label":"target (sessions per interval)"`, `"check 701 (35%)"`} {
				if tt.name == "html-report-single" && !strings.Contains(dom, want) {
					t.Errorf("the rendered page lacks %s", want)
				}
			}
			if lines := reConsole.FindAllString(stderr, -1); lines != nil {
				t.Errorf("the browser console has messages:\n%s", strings.Join(lines, "\n"))
			}

			// A wide screen and a narrow one (a laptop's half screen).
			for _, width := range []int{1400, 800} {
				shot := filepath.Join(dir, fmt.Sprintf("%s-%d.png", tt.name, width))
				chromium(ctx, t, bin, page, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,4000", width))
				checkScreenshot(t, shot, width)
				t.Logf("page %s, screenshot %s", page, shot)
			}
		})
	}
}

// checkRenderedDOM checks the DOM after the page's script ran: every chart
// was created and has pixels, and no script error was recorded.
func checkRenderedDOM(t *testing.T, dom string) {
	t.Helper()
	m := reBody.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no <body> in the DOM:\n%.2000s", dom)
	}
	attrs := map[string]string{}
	for _, a := range reAttr.FindAllStringSubmatch(m[1], -1) {
		attrs[a[1]] = a[2]
	}
	charts := attrs["data-charts"]
	if charts == "" || charts == "0" {
		t.Fatalf("body %q: no charts expected", m[0])
	}
	if attrs["data-rendered"] != charts || attrs["data-painted"] != charts {
		t.Errorf("body %q: want data-rendered and data-painted = data-charts", m[0])
	}
	canvases := reCanvasTag.FindAllString(dom, -1)
	if fmt.Sprint(len(canvases)) != charts {
		t.Errorf("%d canvases for %s charts", len(canvases), charts)
	}
	for _, c := range canvases {
		if !strings.Contains(c, `data-rendered="1"`) || !strings.Contains(c, `width="`) {
			t.Errorf("canvas not drawn by the chart library: %s", c)
		}
	}
	e := reErrors.FindStringSubmatch(dom)
	switch {
	case e == nil:
		t.Error("no #mb-errors element in the DOM")
	case strings.TrimSpace(e[2]) != "" || !strings.Contains(e[1], "hidden"):
		t.Errorf("the page recorded script errors:\n%s", e[2])
	}
}

// checkScreenshot checks that the screenshot is a PNG of the width asked
// for with the many colours of charts in it (not a blank or an error page).
func checkScreenshot(t *testing.T, path string, width int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	bounds := img.Bounds()
	if bounds.Dx() != width {
		t.Errorf("screenshot %dx%d, want %d wide", bounds.Dx(), bounds.Dy(), width)
	}
	colours := map[uint32]bool{}
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 3 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[(r>>11)<<10|(g>>11)<<5|b>>11] = true
		}
	}
	if len(colours) < 64 {
		t.Errorf("screenshot %s has %d colours: blank or unstyled?", path, len(colours))
	}
}

// withServer gives r a [server] section: CPU rising over ten samples.
func withServer(r *report.Run) *report.Run {
	r.Server = serverFixture()
	for i := range 10 {
		r.Server.Timeline = append(r.Server.Timeline, metrics.ServerPoint{At: r.Started.Add(time.Duration(i) * 10 * time.Second),
			Values: map[string]float64{"host.cpu_percent": 50 + 5*float64(i), "host.disk_util_percent": 20, "dovecot.cpu_cores": 0.5 + 0.1*float64(i), "mailbench.cpu_cores": 0.4}})
	}
	return r
}
