package serverwatch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// host is [server] host: the machine's CPU, memory, disk utilisation and
// load, and mailbench's own CPU apart (it shares the host).
type host struct {
	opts  Options
	cores int

	prevAt              time.Time
	prevBusy, prevTotal float64
	prevSelf            float64
	prevDisk            map[string]blockdevice.Diskstats
}

func newHost(opts Options) *host {
	h := &host{opts: opts}
	if fs, err := procfs.NewFS(opts.ProcRoot); err == nil {
		if st, err := fs.Stat(); err == nil {
			h.cores = len(st.CPU)
		}
	}
	return h
}

func (h *host) name() string { return "host" }
func (h *host) kind() string { return "host" }

func (h *host) sample(_ context.Context, now time.Time) ([]value, error) {
	fs, err := procfs.NewFS(h.opts.ProcRoot)
	if err != nil {
		return nil, err
	}
	st, err := fs.Stat()
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	c := st.CPUTotal
	idle := c.Idle + c.Iowait
	total := c.User + c.Nice + c.System + idle + c.IRQ + c.SoftIRQ + c.Steal
	busy := total - idle
	var out []value
	if h.cores == 0 {
		h.cores = len(st.CPU)
	}
	self := 0.0
	if p, err := fs.Proc(h.opts.Self); err == nil {
		if ps, err := p.Stat(); err == nil {
			self = ps.CPUTime()
		}
	}
	if !h.prevAt.IsZero() {
		if dt := total - h.prevTotal; dt > 0 {
			out = append(out, value{"host.cpu_percent", "%", 100 * (busy - h.prevBusy) / dt})
			if h.cores > 0 {
				out = append(out, value{"host.cpu_cores", "cores", float64(h.cores) * (busy - h.prevBusy) / dt})
			}
		}
		if secs := now.Sub(h.prevAt).Seconds(); secs > 0 && self >= h.prevSelf {
			out = append(out, value{"mailbench.cpu_cores", "cores", (self - h.prevSelf) / secs})
		}
	}
	h.prevBusy, h.prevTotal, h.prevSelf = busy, total, self

	if m, err := fs.Meminfo(); err == nil && m.MemTotal != nil && m.MemAvailable != nil {
		used := float64(*m.MemTotal-*m.MemAvailable) * 1024
		out = append(out, value{"host.mem_used_bytes", "bytes", used},
			value{"host.mem_used_percent", "%", 100 * used / (float64(*m.MemTotal) * 1024)})
	}
	if l, err := fs.LoadAvg(); err == nil {
		out = append(out, value{"host.load1", "", l.Load1})
	}
	out = append(out, h.disks(now)...)
	h.prevAt = now
	return out, nil
}

// disks is the busiest disk's utilisation (the share of the interval it
// had I/O in flight) and the bytes read and written on all disks, per
// second; loop, ram and zram devices are no disks.
func (h *host) disks(now time.Time) []value {
	bfs, err := blockdevice.NewFS(h.opts.ProcRoot, h.opts.SysRoot)
	if err != nil {
		return nil
	}
	stats, err := bfs.ProcDiskstats()
	if err != nil {
		return nil
	}
	cur := map[string]blockdevice.Diskstats{}
	for _, d := range stats {
		n := d.Info.DeviceName
		if strings.HasPrefix(n, "loop") || strings.HasPrefix(n, "ram") || strings.HasPrefix(n, "zram") {
			continue
		}
		cur[n] = d
	}
	// A partition (sda1, nvme0n1p2) counts in its disk (sda, nvme0n1).
	for n := range cur {
		for m := range cur {
			if m != n && strings.HasPrefix(n, m) {
				delete(cur, n)
				break
			}
		}
	}
	prev := h.prevDisk
	h.prevDisk = cur
	if prev == nil || h.prevAt.IsZero() {
		return nil
	}
	ms := float64(now.Sub(h.prevAt).Milliseconds())
	if ms <= 0 {
		return nil
	}
	util, read, written := 0.0, 0.0, 0.0
	for n, d := range cur {
		p, ok := prev[n]
		if !ok || d.IOsTotalTicks < p.IOsTotalTicks {
			continue
		}
		util = max(util, 100*float64(d.IOsTotalTicks-p.IOsTotalTicks)/ms)
		read += float64(d.ReadSectors-p.ReadSectors) * 512
		written += float64(d.WriteSectors-p.WriteSectors) * 512
	}
	secs := ms / 1000
	return []value{{"host.disk_util_percent", "%", min(util, 100)},
		{"host.disk_read_bytes_per_s", "bytes/s", read / secs}, {"host.disk_write_bytes_per_s", "bytes/s", written / secs}}
}
