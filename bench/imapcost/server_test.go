package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestParseProcStat: pid, ppid and the four CPU times of proc(5)'s stat
// line, in USER_HZ ticks, with command names that hold spaces and
// parentheses; lines that are not a stat line are refused.
func TestParseProcStat(t *testing.T) {
	const tick = 10 * time.Millisecond
	// proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime priority ...
	tail := " S 1836 1836 1836 0 -1 4194560 2000 3000 0 0 12 3 700 55 20 0 1 0 4242 9000 100\n"
	for _, c := range []struct {
		name string
		in   string
		want procStat
		ok   bool
	}{
		{"plain", "1838 (imap-login)" + tail, procStat{1838, 1836, 15 * tick, 755 * tick}, true},
		{"spaces and parentheses in the name", "77 (a) b (c d))" + tail, procStat{77, 1836, 15 * tick, 755 * tick}, true},
		{"no name", "77 S 1 2 3\n", procStat{}, false},
		{"short", "77 (x) S 1 2 3 4 5\n", procStat{}, false},
		{"bad pid", "x7 (x)" + tail, procStat{}, false},
		{"negative time", "77 (x) S 1 1 1 0 -1 0 0 0 0 0 -12 3 7 5 20\n", procStat{}, false},
		{"empty", "", procStat{}, false},
	} {
		got, ok := parseProcStat([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("%s: parseProcStat = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestReadServerCPUCountsChildren: a child that burns CPU and exits is
// counted in its parent's figure (reaped), and so is a live child; a pid
// that is not running has no figure.
func TestReadServerCPUCountsChildren(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	// A parent shell that runs a busy child to its end (reaped), then a
	// second one that stays alive once done (sleep), and waits.
	parent := exec.Command(sh, "-c", `
		i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done &
		wait
		( i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo live-done; exec sleep 60 ) &
		echo reaped
		wait`)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-parent.Process.Pid, syscall.SIGKILL); parent.Wait() }()
	buf := make([]byte, 64)
	var seen string
	for !strings.Contains(seen, "reaped") || !strings.Contains(seen, "live-done") {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("reading the shell: %v (so far %q)", err, seen)
		}
		seen += string(buf[:n])
	}
	pid := parent.Process.Pid
	total, ok := readServerCPU(pid)
	if !ok {
		t.Fatalf("readServerCPU(%d): no figure for a running process", pid)
	}
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	self, _ := parseProcStat(data)
	// Both busy loops together cost well over two ticks; the parent's own
	// waiting almost nothing.
	if total < self.own+self.reaped || total-self.own < 20*time.Millisecond {
		t.Errorf("readServerCPU = %v; the parent's own %v, reaped %v: the children's CPU is missing", total, self.own, self.reaped)
	}
	if self.reaped == 0 {
		t.Errorf("the reaped child's CPU is not in the parent's cutime: %+v", self)
	}
	if total == self.own+self.reaped {
		t.Errorf("readServerCPU = %v counts no live child", total)
	}
	if _, ok := readServerCPU(1 << 30); ok {
		t.Error("readServerCPU of a pid that is not running reported a figure")
	}
}
