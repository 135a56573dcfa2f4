package serverwatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/mailbench/mailbench/workload"
)

// userHZ is the kernel's clock tick for /proc/PID/stat's times (procfs
// assumes the same).
const userHZ = 100

// processes is a [[server.processes]] group: its CPU (user and system,
// its reaped children's included, so that short-lived workers count), RSS,
// process and thread count, disk I/O, context switches and open files.
type processes struct {
	cfg  workload.ServerProcessSource
	opts Options

	prevAt                                          time.Time
	prevCPU, prevSys, prevRead, prevWrite, prevRops float64
	prevWops, prevCtx                               float64
	ioKnown                                         bool
}

func newProcesses(cfg workload.ServerProcessSource, opts Options) *processes {
	return &processes{cfg: cfg, opts: opts}
}

func (p *processes) name() string { return p.cfg.Name }
func (p *processes) kind() string { return "processes" }

// members are the pids of the group now.
func (p *processes) members(fs procfs.FS) ([]procfs.Proc, error) {
	all, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	switch {
	case p.cfg.Pidfile != "":
		b, err := os.ReadFile(p.cfg.Pidfile)
		if err != nil {
			return nil, err
		}
		root, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: no pid in it", p.cfg.Pidfile)
		}
		parent := map[int]int{}
		for _, pr := range all {
			if st, err := pr.Stat(); err == nil {
				parent[pr.PID] = st.PPID
			}
		}
		if _, ok := parent[root]; !ok {
			return nil, fmt.Errorf("%s: pid %d is not running", p.cfg.Pidfile, root)
		}
		var out []procfs.Proc
		for _, pr := range all {
			for pid, hops := pr.PID, 0; pid > 0 && hops < 64; pid, hops = parent[pid], hops+1 {
				if pid == root {
					out = append(out, pr)
					break
				}
			}
		}
		return out, nil
	case len(p.cfg.Comm) > 0:
		var out []procfs.Proc
		for _, pr := range all {
			if c, err := pr.Comm(); err == nil && slices.Contains(p.cfg.Comm, c) {
				out = append(out, pr)
			}
		}
		return out, nil
	default:
		b, err := os.ReadFile(filepath.Join(p.opts.SysRoot, "fs/cgroup", p.cfg.Cgroup, "cgroup.procs"))
		if err != nil {
			return nil, err
		}
		var out []procfs.Proc
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				if pr, err := fs.Proc(pid); err == nil {
					out = append(out, pr)
				}
			}
		}
		return out, nil
	}
}

func (p *processes) sample(_ context.Context, now time.Time) ([]value, error) {
	fs, err := procfs.NewFS(p.opts.ProcRoot)
	if err != nil {
		return nil, err
	}
	procs, err := p.members(fs)
	if err != nil {
		return nil, err
	}
	if len(procs) == 0 {
		return []value{{p.cfg.Name + ".processes", "", 0}}, fmt.Errorf("no process matches")
	}
	var cpu, sys, rss, threads, read, write, rops, wops, ctxs, files float64
	ioKnown, filesKnown := true, true
	n := 0
	for _, pr := range procs {
		st, err := pr.Stat()
		if err != nil {
			continue // gone since the walk
		}
		n++
		cpu += st.CPUTime() + float64(st.CUTime+st.CSTime)/userHZ
		sys += float64(int(st.STime)+st.CSTime) / userHZ
		rss += float64(st.ResidentMemory())
		threads += float64(st.NumThreads)
		if io, err := pr.IO(); err == nil {
			read, write, rops, wops = read+float64(io.ReadBytes), write+float64(io.WriteBytes), rops+float64(io.SyscR), wops+float64(io.SyscW)
		} else {
			ioKnown = false // another user's process, without root
		}
		if s, err := pr.NewStatus(); err == nil {
			ctxs += float64(s.VoluntaryCtxtSwitches + s.NonVoluntaryCtxtSwitches)
		}
		if k, err := pr.FileDescriptorsLen(); err == nil {
			files += float64(k)
		} else {
			filesKnown = false
		}
	}
	name := p.cfg.Name
	out := []value{{name + ".processes", "", float64(n)}, {name + ".threads", "", threads}, {name + ".rss_bytes", "bytes", rss}}
	if filesKnown {
		out = append(out, value{name + ".open_files", "", files})
	}
	if !p.prevAt.IsZero() {
		if secs := now.Sub(p.prevAt).Seconds(); secs > 0 {
			// A member that exited and was reaped by a process outside the
			// group takes its time with it: the drop is no negative use.
			rate := func(cur, prev float64) float64 { return max(cur-prev, 0) / secs }
			out = append(out, value{name + ".cpu_cores", "cores", rate(cpu, p.prevCPU)},
				value{name + ".cpu_system_cores", "cores", rate(sys, p.prevSys)},
				value{name + ".ctx_switches_per_s", "/s", rate(ctxs, p.prevCtx)})
			if ioKnown && p.ioKnown {
				out = append(out, value{name + ".read_bytes_per_s", "bytes/s", rate(read, p.prevRead)},
					value{name + ".write_bytes_per_s", "bytes/s", rate(write, p.prevWrite)},
					value{name + ".read_ops_per_s", "/s", rate(rops, p.prevRops)},
					value{name + ".write_ops_per_s", "/s", rate(wops, p.prevWops)})
			}
		}
	}
	p.prevAt, p.prevCPU, p.prevSys, p.prevCtx = now, cpu, sys, ctxs
	p.prevRead, p.prevWrite, p.prevRops, p.prevWops, p.ioKnown = read, write, rops, wops, ioKnown
	return out, nil
}
