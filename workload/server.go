package workload

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
)

// ServerConfig is what mailbench watches of the server under test while a
// run goes (internal/observe/serverwatch): its host and processes through /proc
// when it shares mailbench's host, its own metrics endpoints, and commands
// whose output is a number. Every source is sampled every timeline
// interval under a deadline; a source that fails is named in the report,
// never a failed run. Nothing is watched by default.
type ServerConfig struct {
	// Host records the host's CPU, memory, disk utilisation and load
	// (/proc), and mailbench's own CPU beside it.
	Host bool `toml:"host"`
	// Timeout bounds each sample of each source. Default 2s.
	Timeout   Duration              `toml:"timeout"`
	Processes []ServerProcessSource `toml:"processes"`
	Metrics   []ServerMetricsSource `toml:"metrics"`
	Commands  []ServerCommandSource `toml:"commands"`
	Criteria  []ServerCriterion     `toml:"criteria"`
}

// ServerProcessSource is a group of local processes, chosen by one of:
// the process in a pidfile and all its descendants (a master and its
// workers), processes by name, or the processes of a cgroup.
type ServerProcessSource struct {
	Name    string   `toml:"name"`
	Pidfile string   `toml:"pidfile"`
	Comm    []string `toml:"comm"`   // process names (/proc/PID/comm), exactly
	Cgroup  string   `toml:"cgroup"` // a cgroup v2 path under /sys/fs/cgroup, e.g. /system.slice/dovecot.service
}

// ServerMetricsSource is a Prometheus or OpenMetrics text endpoint (Dovecot's
// stats listener, node_exporter, a Postfix exporter): the metrics named are
// recorded, all their series summed; counters become rates per second.
type ServerMetricsSource struct {
	Name    string   `toml:"name"`
	URL     string   `toml:"url"`
	Metrics []string `toml:"metrics"`
}

// ServerCommandSource is a command whose output's first number is recorded
// (a mail queue's length, say). It runs without a shell unless Run names
// one.
type ServerCommandSource struct {
	Name string   `toml:"name"`
	Run  []string `toml:"run"`
}

// ServerCriterion is a row of mailbench's own in the compliance table: a
// server figure's mean over the measurement window at most Max (host CPU at
// most 80%, a queue under 100), so that a sizing keeps headroom.
type ServerCriterion struct {
	Figure string  `toml:"figure"` // "host.cpu_percent", "dovecot.rss_bytes", "queue"
	Max    float64 `toml:"max"`
}

// The bounds of the server section: sources are sampled every interval
// for the whole run, each a process walk or an HTTP request.
const (
	MaxServerSources = 32
	MaxServerMetrics = 64 // per metrics source
)

// serverName is a source's name: it starts the names of its figures.
var serverName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// validate adds the problems of the server section to v.
func (sc *ServerConfig) validate(v *validator) {
	base := tomlstrict.PathOf("server")
	v.duration(base.With("timeout"), sc.Timeout, true)
	v.atMostDuration(base.With("timeout"), sc.Timeout, time.Minute)
	if n := len(sc.Processes) + len(sc.Metrics) + len(sc.Commands); n > MaxServerSources {
		v.add(base, "%d sources: at most %d", n, MaxServerSources)
	}
	names := map[string]bool{}
	if sc.Host {
		names["host"], names["mailbench"] = true, true
	}
	name := func(p tomlstrict.Path, n string) {
		switch {
		case !serverName.MatchString(n):
			v.add(p.With("name"), "must be 1 to 32 of a-z, 0-9, _ and -, starting with a letter (got %q)", n)
		case n == "host" || n == "mailbench":
			v.add(p.With("name"), "%q is the name of [server] host's figures", n)
		case names[n]:
			v.add(p.With("name"), "%q names two sources", n)
		}
		names[n] = true
	}
	for i, p := range sc.Processes {
		path := base.With("processes").At(i)
		name(path, p.Name)
		set := 0
		for _, s := range []bool{p.Pidfile != "", len(p.Comm) > 0, p.Cgroup != ""} {
			if s {
				set++
			}
		}
		if set != 1 {
			v.add(path, "give exactly one of pidfile, comm and cgroup (got %d)", set)
		}
		if p.Cgroup != "" && (p.Cgroup[0] != '/' || containsDotDot(p.Cgroup)) {
			v.add(path.With("cgroup"), "must be an absolute cgroup path without .. (got %q)", p.Cgroup)
		}
	}
	for i, m := range sc.Metrics {
		path := base.With("metrics").At(i)
		name(path, m.Name)
		if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(path.With("url"), "must be an http:// or https:// URL (got %q)", m.URL)
		}
		if len(m.Metrics) == 0 || len(m.Metrics) > MaxServerMetrics {
			v.add(path.With("metrics"), "name 1 to %d metrics (got %d)", MaxServerMetrics, len(m.Metrics))
		}
		for k, n := range m.Metrics {
			if !metricName.MatchString(n) {
				v.add(path.With("metrics").At(k), "not a metric name: %q", n)
			}
		}
	}
	for i, c := range sc.Commands {
		path := base.With("commands").At(i)
		name(path, c.Name)
		if len(c.Run) == 0 || c.Run[0] == "" {
			v.add(path.With("run"), "must name a command")
		}
	}
	for i, c := range sc.Criteria {
		path := base.With("criteria").At(i)
		if c.Figure == "" {
			v.add(path.With("figure"), "must name a figure (source.figure, e.g. host.cpu_percent)")
		}
		v.number(path.With("max"), c.Max, 0, 1e18, false, false)
	}
}

// metricName is a Prometheus metric name.
var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

func containsDotDot(p string) bool { return slices.Contains(strings.Split(p, "/"), "..") }

// Watched reports whether the config asks for any server source.
func (sc ServerConfig) Watched() bool {
	return sc.Host || len(sc.Processes)+len(sc.Metrics)+len(sc.Commands) > 0
}
