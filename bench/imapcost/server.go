package main

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// Server CPU: what the server spent on the measured phase.
//
// Why: a client that made the server work harder per session would show up
// in the server's figures and slow the server's pace, and on a host the two
// share, the client's own CPU per session follows that pace (docs/
// performance.md, "Issue 37, twenty-seventh round"). The comparison with
// imaptest is fair only when the server spends about the same on a session
// of either tool; bench/imaptest-vs-mailbench prints both.

// readServer returns readServerCPU of the -server-pid-file's process, and
// false when there is none.
func (b *bench) readServer() (time.Duration, bool) {
	if b.serverPid == 0 {
		return 0, false
	}
	return readServerCPU(b.serverPid)
}

// readServerCPU returns the CPU time that the process pid and its children
// have used so far: its own user and system time, its reaped children's,
// and its live children's own. Over an interval, the difference is what a
// server whose workers are the children of one master (Dovecot's) spent,
// whether the workers exited in the interval or not. It returns false when
// pid is not running or /proc is not readable.
func readServerCPU(pid int) (time.Duration, bool) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var total time.Duration
	found := false
	for _, e := range dir {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		st, ok := parseProcStat(data)
		switch {
		case !ok:
		case st.pid == pid:
			total += st.own + st.reaped
			found = true
		case st.ppid == pid:
			total += st.own
		}
	}
	return total, found
}

// procStat is what readServerCPU needs of a /proc/PID/stat line.
type procStat struct {
	pid, ppid   int
	own, reaped time.Duration // utime+stime; cutime+cstime (reaped children)
}

// parseProcStat parses a /proc/PID/stat line (proc(5)). The command name, in
// parentheses, may hold spaces and parentheses itself: the fields are
// counted after its last ')'. It doesn't perform I/O.
func parseProcStat(data []byte) (procStat, bool) {
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 1 || end < open {
		return procStat{}, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(data[:open])))
	if err != nil {
		return procStat{}, false
	}
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16)
	// cstime(17), counting as proc(5) does from pid(1) and comm(2).
	f := bytes.Fields(data[end+1:])
	if len(f) < 15 {
		return procStat{}, false
	}
	n := make([]int64, 0, 5)
	for _, i := range []int{1, 11, 12, 13, 14} { // ppid utime stime cutime cstime
		v, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil || v < 0 {
			return procStat{}, false
		}
		n = append(n, v)
	}
	tick := time.Second / userHZ
	return procStat{
		pid:    pid,
		ppid:   int(n[0]),
		own:    time.Duration(n[1]+n[2]) * tick,
		reaped: time.Duration(n[3]+n[4]) * tick,
	}, true
}

// readPidFile returns the pid in a pid file (the first line, as Dovecot's
// master.pid holds it).
func readPidFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || pid <= 0 {
		return 0, &os.PathError{Op: "parse pid", Path: path, Err: strconv.ErrSyntax}
	}
	return pid, nil
}
