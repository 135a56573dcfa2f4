package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/mailbench/mailbench/metrics"
)

// writeServer writes the "Server" section: per source, each figure's mean
// and peak over the measurement window, and the sources that failed.
func writeServer(w io.Writer, s *metrics.ServerReport) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nServer (observed beside the run every %s; mean / peak over the measurement window; not a proven cause)\n",
		trimFloat(s.IntervalSeconds)+" s")
	var order []string
	bySource := map[string][]string{}
	for _, f := range s.Figures {
		src, fig, _ := strings.Cut(f.Name, ".")
		if fig == "" {
			fig = src
		}
		if _, ok := bySource[src]; !ok {
			order = append(order, src)
		}
		bySource[src] = append(bySource[src], fig+" "+FormatServerValue(f.Unit, f.Mean)+" / "+FormatServerValue(f.Unit, f.Peak)+unitSuffix(f.Unit))
	}
	col := 11
	for _, src := range s.Sources {
		col = max(col, len(src.Name))
	}
	for _, src := range order {
		note := ""
		if src == "mailbench" {
			note = " (the generator itself, on the same host)"
		}
		fmt.Fprintf(w, "  %-*s %s%s\n", col, src, strings.Join(bySource[src], ", "), note)
	}
	for _, src := range s.Sources {
		if src.Failures > 0 {
			fmt.Fprintf(w, "  %-*s %d of %d samples failed (last: %s)\n", col, src.Name, src.Failures, src.Samples, src.LastError)
		}
	}
	if s.Dropped > 0 {
		fmt.Fprintf(w, "  %d samples beyond the first %d are not in the timeline\n", s.Dropped, metrics.MaxServerPoints)
	}
}

// unitSuffix is what follows a figure's values: its unit, where the
// value does not carry it.
func unitSuffix(unit string) string {
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
