// Package promexport exposes a run's figures while it runs, for the
// dashboards of long runs: a Prometheus endpoint (`mailbench run
// --metrics-listen ADDR`) with a histogram per timed function, operation
// and error counts, the session counts of the open model (scheduled,
// started, late, dropped, active) and the generator's own health (CPU, GC,
// memory: the Go and process collectors). Names follow Prometheus
// conventions (docs/metrics.md).
//
// The report stays the result: the endpoint's histograms have fixed
// buckets for dashboards, while the compliance table counts exactly.
package promexport

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/measure"
)

// Buckets are the upper bounds, in seconds, of the duration histograms:
// 1 ms to 120 s, so that the default 5 s and 60 s limits are bucket
// boundaries.
var Buckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Exporter is a measure.Observer that keeps the run's figures in a
// Prometheus registry of its own. It is safe for concurrent use.
type Exporter struct {
	reg        *prometheus.Registry
	duration   *prometheus.HistogramVec
	operations *prometheus.CounterVec
	sessions   atomic.Pointer[Sessions]
	server     *prometheus.GaugeVec
}

// Sessions are the open model's counts so far (see schedule.Counts).
type Sessions struct {
	User    schedule.Counts
	Active  int64
	Elapsed time.Duration
	// Connected and ConnectedTarget: the connected clients held now, and
	// asked for ([clients]).
	Connected, ConnectedTarget int64
}

var _ measure.Observer = (*Exporter)(nil)

// New returns an Exporter for a run named name (the "run" label of every
// series, so that several runs can share a Prometheus).
func New(name string) *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry()}
	constLabels := prometheus.Labels{"run": name}
	e.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "mailbench", Name: "operation_duration_seconds",
		Help:        "Response time of the timed functions (IMAP, SMTP, delivery times), successful or not.",
		Buckets:     Buckets,
		ConstLabels: constLabels,
	}, []string{"function"})
	e.operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mailbench", Name: "operations_total",
		Help:        "Timed operations by function and result class (ok, or the error class).",
		ConstLabels: constLabels,
	}, []string{"function", "class"})
	e.server = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mailbench", Name: "server_figure",
		Help:        "The server under test's figures at the last [server] sample (figure: source.figure, e.g. host.cpu_percent, dovecot.cpu_cores).",
		ConstLabels: constLabels,
	}, []string{"figure"})
	e.reg.MustRegister(e.duration, e.operations, e.server,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, get func(Sessions) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "mailbench", Name: name, Help: help, ConstLabels: constLabels,
		}, func() float64 {
			if s := e.sessions.Load(); s != nil {
				return get(*s)
			}
			return 0
		})
	}
	e.reg.MustRegister(
		counter("sessions_scheduled_total", "User sessions due in the measurement window so far.", func(s Sessions) float64 { return float64(s.User.Scheduled) }),
		counter("sessions_started_total", "User sessions started (of those scheduled).", func(s Sessions) float64 { return float64(s.User.Started) }),
		counter("sessions_late_total", "User sessions started later than load.late_tolerance.", func(s Sessions) float64 { return float64(s.User.Late) }),
		counter("sessions_dropped_total", "User sessions that could not start (concurrency cap or no free user).", func(s Sessions) float64 { return float64(s.User.Dropped) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "mailbench", Name: "sessions_active", Help: "Sessions running now (user sessions and inbound mail).", ConstLabels: constLabels,
		}, func() float64 {
			if s := e.sessions.Load(); s != nil {
				return float64(s.Active)
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "mailbench", Name: "connected_clients", Help: "Connected clients ([clients]) held now.", ConstLabels: constLabels,
		}, func() float64 {
			if s := e.sessions.Load(); s != nil {
				return float64(s.Connected)
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "mailbench", Name: "connected_clients_target", Help: "Connected clients asked for (clients.connected).", ConstLabels: constLabels,
		}, func() float64 {
			if s := e.sessions.Load(); s != nil {
				return float64(s.ConnectedTarget)
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "mailbench", Name: "run_elapsed_seconds", Help: "Time since the run's start.", ConstLabels: constLabels,
		}, func() float64 {
			if s := e.sessions.Load(); s != nil {
				return s.Elapsed.Seconds()
			}
			return 0
		}),
	)
	return e
}

// Observe counts one timed operation.
func (e *Exporter) Observe(o measure.Observation) {
	class := string(o.Class)
	if o.Class == measure.OK {
		class = "ok"
	}
	e.duration.WithLabelValues(string(o.Function)).Observe(o.Duration.Seconds())
	e.operations.WithLabelValues(string(o.Function), class).Inc()
}

// SetSessions records the latest session counts (from the run's progress
// callback, about once a second).
func (e *Exporter) SetSessions(s Sessions) { e.sessions.Store(&s) }

// SetServer publishes the figures of a [server] sample; a figure the
// sample lacks keeps its last value.
func (e *Exporter) SetServer(values map[string]float64) {
	for name, v := range values {
		e.server.WithLabelValues(name).Set(v)
	}
}

// Handler serves the registry in the Prometheus exposition formats.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{Registry: e.reg})
}

// Serve listens on addr and serves /metrics until ctx is done. It returns
// once the listener is up (the error of a failed listen), serving in the
// background; the returned address is the one bound (for ":0").
func (e *Exporter) Serve(ctx context.Context, addr string) (net.Addr, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener is ours: nothing else to report it to
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
