package serverwatch

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailbench/mailbench/workload"
)

// fakeProc is a /proc tree a test writes: the host's CPU ticks, memory,
// load and disks, and processes with their CPU ticks.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc {
	f := &fakeProc{t: t, root: t.TempDir()}
	f.write("meminfo", "MemTotal:       4000000 kB\nMemFree:        1000000 kB\nMemAvailable:   3000000 kB\n")
	f.write("loadavg", "1.50 1.00 0.50 2/300 4000\n")
	f.host(0, 0)
	f.disk(0)
	return f
}

func (f *fakeProc) write(name, data string) {
	f.t.Helper()
	p := filepath.Join(f.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// host sets the host's busy and idle ticks (2 CPUs).
func (f *fakeProc) host(busy, idle int) {
	f.write("stat", fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\nbtime 1700000000\n", busy, idle))
}

// disk sets sda's I/O ticks (ms) and sda1's, which must not count twice.
func (f *fakeProc) disk(ioMs int) {
	f.write("diskstats", fmt.Sprintf("   8       0 sda 10 0 %d 0 20 0 %d 0 0 %d 0\n   8       1 sda1 10 0 %d 0 20 0 %d 0 0 %d 0\n   7       0 loop0 1 0 1 0 0 0 0 0 0 999999 0\n",
		ioMs*2, ioMs*4, ioMs, ioMs*2, ioMs*4, ioMs))
}

// proc writes process pid: its parent, name, CPU ticks (user, and reaped
// children's), RSS pages and threads.
func (f *fakeProc) proc(pid, ppid int, comm string, utime, cutime, rssPages, threads int) {
	zeros := strings.Repeat(" 0", 30)
	f.write(fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (%s) S %d 1 1 0 -1 0 0 0 0 0 %d 0 %d 0 20 0 %d 0 100 1000000 %d 18446744073709551615%s\n",
		pid, comm, ppid, utime, cutime, threads, rssPages, zeros))
	f.write(fmt.Sprintf("%d/comm", pid), comm+"\n")
	f.write(fmt.Sprintf("%d/io", pid), fmt.Sprintf("rchar: 0\nwchar: 0\nsyscr: %d\nsyscw: %d\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: 0\n", utime, utime, utime*4096, utime*8192))
	f.write(fmt.Sprintf("%d/status", pid), fmt.Sprintf("Name:\t%s\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t0\n", comm, utime*10))
	os.MkdirAll(filepath.Join(f.root, fmt.Sprint(pid), "fd"), 0o755)
	f.write(fmt.Sprintf("%d/fd/0", pid), "")
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

// TestFakeProc: a pidfile's process and its descendants, not the others;
// their CPU from two samples (reaped children's time included); the host's
// CPU, memory, load and busiest disk; rates only from the second sample.
func TestFakeProc(t *testing.T) {
	f := newFakeProc(t)
	f.proc(100, 1, "master", 100, 0, 1000, 1)
	f.proc(101, 100, "imap", 50, 0, 500, 2)
	f.proc(102, 101, "imap-login", 10, 0, 100, 1)
	f.proc(200, 1, "other", 999, 0, 9999, 9)
	pidfile := filepath.Join(t.TempDir(), "master.pid")
	os.WriteFile(pidfile, []byte("100\n"), 0o644)
	cfg := workload.ServerConfig{Host: true, Timeout: workload.Duration{Duration: time.Second},
		Processes: []workload.ServerProcessSource{{Name: "dovecot", Pidfile: pidfile}, {Name: "byname", Comm: []string{"other"}}}}
	w := New(cfg, Options{ProcRoot: f.root, SysRoot: t.TempDir(), Self: 200})
	t0 := time.Unix(1000, 0)
	w.Sample(context.Background(), t0)
	// 10 s later: the group used 250 more ticks (2.5 s: 0.25 cores), 100 of
	// them by a worker that exited and was reaped by the master; the host
	// was busy 1,000 of 2,000 ticks; sda was busy 2.5 s.
	f.proc(100, 1, "master", 150, 100, 1000, 1)
	f.proc(101, 100, "imap", 150, 0, 500, 2)
	f.proc(102, 101, "imap-login", 10, 0, 100, 1)
	f.proc(200, 1, "other", 1999, 0, 9999, 9)
	f.host(1000, 1000)
	f.disk(2500)
	w.Sample(context.Background(), t0.Add(10*time.Second))
	rep := w.Report(t0, t0.Add(time.Hour), 10*time.Second)
	last := rep.Timeline[1].Values
	want := map[string]float64{
		"dovecot.processes": 3, "dovecot.threads": 4, "dovecot.rss_bytes": float64(1600 * os.Getpagesize()), "dovecot.cpu_cores": 0.25,
		"dovecot.open_files": 3, "dovecot.cpu_system_cores": 0, "dovecot.read_ops_per_s": 15, "dovecot.ctx_switches_per_s": 150,
		"byname.processes": 1, "byname.cpu_cores": 1,
		"host.cpu_percent": 50, "host.cpu_cores": 1, "host.mem_used_bytes": 1000000 * 1024, "host.mem_used_percent": 25, "host.load1": 1.5,
		"host.disk_util_percent": 25, "mailbench.cpu_cores": 1,
	}
	for k, v := range want {
		if got, ok := last[k]; !ok || !near(got, v) {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, v)
		}
	}
	if _, ok := rep.Timeline[0].Values["dovecot.cpu_cores"]; ok {
		t.Error("a rate from one sample")
	}
	if rep.Cores != 2 {
		t.Errorf("cores %d", rep.Cores)
	}
	for _, s := range rep.Sources {
		if s.Failures != 0 {
			t.Errorf("source %s failed: %s", s.Name, s.LastError)
		}
	}
	fig, ok := rep.Figure("dovecot.rss_bytes")
	if !ok || fig.Samples != 2 || fig.Unit != "bytes" {
		t.Errorf("figure %+v", fig)
	}
}

// TestEndpoint: a fake OpenMetrics page; a counter's rate, a reset read as
// a restart, a gauge as it is, series summed, a missing metric named.
func TestEndpoint(t *testing.T) {
	var auth atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE dovecot_auth_success counter\n# UNIT dovecot_auth_success logins\n"+
			"dovecot_auth_success_total{mech=\"plain\"} %d\ndovecot_auth_success_total{mech=\"login\"} 0 # {trace_id=\"x\"} 1\n"+
			"# TYPE dovecot_stats_clients gauge\ndovecot_stats_clients 7\n# EOF\n", auth.Load())
	}))
	defer srv.Close()
	cfg := workload.ServerConfig{Timeout: workload.Duration{Duration: time.Second},
		Metrics: []workload.ServerMetricsSource{{Name: "dovecot", URL: srv.URL, Metrics: []string{"dovecot_auth_success", "dovecot_stats_clients", "nope"}}}}
	w := New(cfg, Options{})
	t0 := time.Unix(0, 0)
	auth.Store(100)
	w.Sample(context.Background(), t0)
	auth.Store(300)
	w.Sample(context.Background(), t0.Add(10*time.Second))
	auth.Store(50) // the server restarted
	w.Sample(context.Background(), t0.Add(20*time.Second))
	rep := w.Report(t0, t0.Add(time.Hour), 10*time.Second)
	if v := rep.Timeline[1].Values["dovecot.dovecot_auth_success_per_s"]; v != 20 {
		t.Errorf("rate %v, want 20", v)
	}
	if v := rep.Timeline[2].Values["dovecot.dovecot_auth_success_per_s"]; v != 5 {
		t.Errorf("after the reset: %v, want 5 (50 in 10 s)", v)
	}
	if v := rep.Timeline[0].Values["dovecot.dovecot_stats_clients"]; v != 7 {
		t.Errorf("gauge %v", v)
	}
	src := rep.Sources[0]
	if src.Samples != 3 || src.Failures != 3 || !strings.Contains(src.LastError, "not on the page: nope") {
		t.Errorf("source %+v", src)
	}
}

// TestHangingSources: an endpoint that never answers and a command that
// never ends each cost one failure per sample at the timeout, not a hung
// watcher.
func TestHangingSources(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	cfg := workload.ServerConfig{Timeout: workload.Duration{Duration: 200 * time.Millisecond},
		Metrics:  []workload.ServerMetricsSource{{Name: "stuck", URL: srv.URL, Metrics: []string{"x"}}},
		Commands: []workload.ServerCommandSource{{Name: "slow", Run: []string{"sleep", "30"}}, {Name: "queue", Run: []string{"sh", "-c", "echo 'queue: 42 messages'"}}}}
	w := New(cfg, Options{})
	start := time.Now()
	w.Sample(context.Background(), start)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a sample took %v with a 200 ms timeout", d)
	}
	rep := w.Report(start.Add(-time.Second), start.Add(time.Second), time.Second)
	for _, s := range rep.Sources {
		switch s.Name {
		case "stuck", "slow":
			if s.Failures != 1 || s.LastError == "" {
				t.Errorf("%s: %+v", s.Name, s)
			}
		case "queue":
			if s.Failures != 0 || rep.Timeline[0].Values["queue"] != 42 {
				t.Errorf("queue: %+v %v", s, rep.Timeline[0].Values)
			}
		}
	}
}

// TestParseExposition: labels with braces and quotes, timestamps, other
// metrics skipped; an unterminated label set is an error naming its line.
func TestParseExposition(t *testing.T) {
	_, _, err := parseExposition(strings.NewReader("x{a=\"b\" 1\n"), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err %v", err)
	}
	sums, _, err := parseExposition(strings.NewReader(`x{a="}\"{"} 4`+"\n"), []string{"x"})
	if err != nil || sums["x"] != 4 {
		t.Errorf("a brace in a label value: %v, %v", sums, err)
	}
	_, _, err = parseExposition(strings.NewReader("x{a=\"b\" 1\n"), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err %v", err)
	}
	sums, _, err = parseExposition(strings.NewReader(strings.Repeat("y 1\n", 1000)+"x 2\nx{a=\"1\"} 3 1700000000\n"), []string{"x"})
	if err != nil || sums["x"] != 5 {
		t.Errorf("sums %v, %v", sums, err)
	}
}
