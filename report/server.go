package report

import (
	"fmt"
	"math"
	"strings"
)

// UnitSuffix is what follows a figure's values: its unit, where the
// value does not carry it.
func UnitSuffix(unit string) string {
	switch unit {
	case "%":
		return "%"
	case "cores":
		return " cores"
	case "/s":
		return "/s"
	}
	return ""
}

// FormatServerValue renders a server figure's value for its unit: bytes
// in KiB/MiB/GiB, rates of bytes likewise per second, shares and cores
// with the precision they carry. It doesn't perform I/O.
func FormatServerValue(unit string, v float64) string {
	switch unit {
	case "bytes":
		return formatBytes(v)
	case "bytes/s":
		return formatBytes(v) + "/s"
	case "%":
		return fmtFloat(v, 1)
	case "cores":
		return fmtFloat(v, 2)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmtInt(int64(v))
	}
	return fmtFloat(v, 2)
}

func formatBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return fmtFloat(v/(1<<30), 1) + " GiB"
	case v >= 1<<20:
		return fmtFloat(v/(1<<20), 1) + " MiB"
	case v >= 1<<10:
		return fmtFloat(v/(1<<10), 1) + " KiB"
	}
	return fmtFloat(v, 0) + " B"
}

// ServerLine says in one line what the server used over the measurement
// window, the figures that run out first: the host's CPU (of its cores),
// each process group's CPU and the generator's, the busiest disk and the
// memory used; "" without server figures. It is an observation made
// alongside the load, not a cause.
func (r *Run) ServerLine() string {
	s := r.Server
	if s == nil || len(s.Figures) == 0 {
		return ""
	}
	var parts []string
	if f, ok := s.Figure("host.cpu_percent"); ok {
		p := "host CPU " + fmtFloat(f.Mean, 0) + "%"
		if s.Cores > 0 {
			p += " of " + fmt.Sprint(s.Cores) + " cores"
		}
		parts = append(parts, p+" (peak "+fmtFloat(f.Peak, 0)+"%)")
	}
	named := 0.0
	for _, f := range s.Figures {
		if src, ok := strings.CutSuffix(f.Name, ".cpu_cores"); ok && src != "host" {
			parts = append(parts, src+" "+fmtFloat(f.Mean, 2)+" cores")
			named += f.Mean
		}
	}
	// What the host's CPU did beyond the named processes and mailbench:
	// the kernel's own threads (memory management, writeback), other
	// processes. Said, so that it is not read as the server's.
	if f, ok := s.Figure("host.cpu_cores"); ok && named > 0 {
		if other := f.Mean - named; other >= 0.05 {
			parts = append(parts, "the rest "+fmtFloat(other, 2)+" cores (kernel threads, other processes; derived: host − the above)")
		}
	}
	if f, ok := s.Figure("host.disk_util_percent"); ok {
		parts = append(parts, "disk "+fmtFloat(f.Mean, 0)+"% busy (peak "+fmtFloat(f.Peak, 0)+"%)")
	}
	if f, ok := s.Figure("host.mem_used_percent"); ok {
		parts = append(parts, "memory "+fmtFloat(f.Mean, 0)+"% used")
	}
	return strings.Join(parts, "; ")
}
