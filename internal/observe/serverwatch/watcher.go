// Package serverwatch samples the server under test beside a run: its
// host and processes through /proc (when the server shares mailbench's
// host), its own metrics endpoints (Prometheus or OpenMetrics text), and
// commands whose output is a number. Every source is sampled every
// interval under a deadline, all at once; a source that fails is counted
// and named, and never fails the run. Memory is bounded: one point per
// interval, at most metrics.MaxServerPoints.
package serverwatch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/workload"
)

// value is one figure of one sample.
type value struct {
	name, unit string
	v          float64
}

// source is one thing watched. sample returns the figures it has now;
// rates need two samples, so the first gives only the gauges.
type source interface {
	name() string
	kind() string
	sample(ctx context.Context, now time.Time) ([]value, error)
}

// Options are where the sources look; the zero value is the real machine.
type Options struct {
	ProcRoot string // default /proc
	SysRoot  string // default /sys
	HTTP     *http.Client
	// Self is mailbench's own pid, whose CPU the host source gives apart
	// ("mailbench.cpu_cores"); 0: os.Getpid().
	Self int
	// OnSample, when set, is told of every sample as it is recorded (a
	// live metrics endpoint). It must not block.
	OnSample func(metrics.ServerPoint)
}

// Watcher samples the sources of a [server] config.
type Watcher struct {
	sources []source
	timeout time.Duration
	cores   int

	mu      sync.Mutex
	points  []metrics.ServerPoint
	dropped int
	order   []string
	units   map[string]string
	stats   []metrics.ServerSource

	onSample func(metrics.ServerPoint)
}

// New returns the Watcher of cfg. It performs no I/O: a source that
// cannot be read fails at its samples.
func New(cfg workload.ServerConfig, opts Options) *Watcher {
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	if opts.SysRoot == "" {
		opts.SysRoot = "/sys"
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	if opts.Self == 0 {
		opts.Self = os.Getpid()
	}
	w := &Watcher{timeout: cfg.Timeout.Duration, units: map[string]string{}, onSample: opts.OnSample}
	if w.timeout <= 0 {
		w.timeout = 2 * time.Second
	}
	if cfg.Host {
		h := newHost(opts)
		w.cores = h.cores
		w.sources = append(w.sources, h)
	}
	for _, p := range cfg.Processes {
		w.sources = append(w.sources, newProcesses(p, opts))
	}
	for _, m := range cfg.Metrics {
		w.sources = append(w.sources, newEndpoint(m, opts.HTTP))
	}
	for _, c := range cfg.Commands {
		w.sources = append(w.sources, newCommand(c))
	}
	for _, s := range w.sources {
		w.stats = append(w.stats, metrics.ServerSource{Name: s.name(), Kind: s.kind()})
	}
	return w
}

// Sample samples every source once, at once, each under the timeout, and
// records the point at now.
func (w *Watcher) Sample(ctx context.Context, now time.Time) {
	results := make([][]value, len(w.sources))
	errs := make([]error, len(w.sources))
	var wg sync.WaitGroup
	for i, s := range w.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, w.timeout)
			defer cancel()
			results[i], errs[i] = sampleBounded(sctx, s, now, w.timeout)
		}()
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	p := metrics.ServerPoint{At: now, Values: map[string]float64{}}
	for i := range w.sources {
		st := &w.stats[i]
		st.Samples++
		if errs[i] != nil {
			st.Failures++
			st.LastError = measure.Printable(errs[i].Error())
		}
		for _, v := range results[i] {
			if _, ok := w.units[v.name]; !ok {
				w.units[v.name] = v.unit
				w.order = append(w.order, v.name)
			}
			p.Values[v.name] = v.v
		}
	}
	if w.onSample != nil {
		w.onSample(p)
	}
	if len(w.points) >= metrics.MaxServerPoints {
		w.dropped++
		return
	}
	w.points = append(w.points, p)
}

// sampleBounded is s.sample, abandoned (its goroutine left to finish) when
// ctx ends first: a source blocked in a read it cannot cut costs one
// failure, never the run's time.
func sampleBounded(ctx context.Context, s source, now time.Time, timeout time.Duration) ([]value, error) {
	type result struct {
		vs  []value
		err error
	}
	done := make(chan result, 1)
	go func() {
		vs, err := s.sample(ctx, now)
		done <- result{vs, err}
	}()
	select {
	case r := <-done:
		return r.vs, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no answer within %v ([server] timeout)", timeout)
	}
}

// Run samples at once and then every interval until ctx ends.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	w.Sample(ctx, time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w.Sample(ctx, now)
		}
	}
}

// Report is what was observed: the figures over [from, to) (the
// measurement window) and every sample.
func (w *Watcher) Report(from, to time.Time, interval time.Duration) *metrics.ServerReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &metrics.ServerReport{
		IntervalSeconds: interval.Seconds(),
		Sources:         append([]metrics.ServerSource(nil), w.stats...),
		Figures:         metrics.SummarizeServer(w.points, w.order, w.units, from, to),
		Timeline:        append([]metrics.ServerPoint(nil), w.points...),
		Dropped:         w.dropped,
		Cores:           w.cores,
	}
}
