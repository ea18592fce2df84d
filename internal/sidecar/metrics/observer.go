package metrics

import (
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/version"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Observer is what the sidecar tells its operator: the structured log of each start, stop, spawn,
// refusal, exit, re-adoption and collection, and the same facts as Prometheus metrics (GET /v1/metrics).
// The registry is the server's own, not the library's global one: two servers in one process (the tests)
// keep their counts apart.
type Observer struct {
	log  *slog.Logger
	reg  *prometheus.Registry
	code func(error) string // an error's stable code, as the sidecar answers it

	spawns   *prometheus.CounterVec // started workers, by placement mode
	failures *prometheus.CounterVec // spawns that started nothing, by error code
	latency  prometheus.Histogram   // a spawn request's time to its answer, successful ones
	events   *prometheus.CounterVec // published events, by type
	peers    prometheus.Counter     // refused connections

	limited   *prometheus.CounterVec // refusals at a limit, by bound (Limits, LimitedAt)
	limitMu   sync.Mutex
	limitLogs map[string]*limitLog // bound -> when it was last logged, and what was refused since
}

// spawnBuckets run from a millisecond (a spawn on an idle host, docs/benchmarks.md) to seconds (the tail
// under load, a systemd job that waits).
var spawnBuckets = []float64{.001, .002, .004, .008, .016, .032, .064, .128, .256, .512, 1, 2, 4, 8}

// New registers the metrics and logs to l; code gives a failed spawn's error code, counts reports the
// records the watcher knows and how many run, warm how many warm slots are ready (-1: no pool).
func New(l *slog.Logger, code func(error) string, counts func() (int, int), warm func() int) *Observer {
	o := &Observer{
		log:  l,
		reg:  prometheus.NewRegistry(),
		code: code,
		spawns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hlaunch_sidecar_spawns_total", Help: "Workers started by this sidecar, by placement mode.",
		}, []string{"mode"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hlaunch_sidecar_spawn_errors_total",
			Help: "Spawns that started nothing, by error code (invalid, key_held, degraded: refused; cannot_run, command_not_found, internal: failed).",
		}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hlaunch_sidecar_spawn_duration_seconds", Help: "Time from a spawn request to its receipt.",
			Buckets: spawnBuckets,
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hlaunch_sidecar_events_total",
			Help: "Events published, by type (started, exited, oom, adopted: re-adopted workers, refused, lost).",
		}, []string{"type"}),
		peers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hlaunch_sidecar_refused_connections_total", Help: "Connections refused by the peer-credential check.",
		}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hlaunch_sidecar_build_info", Help: "Always 1; the version label is hlaunch's release.",
		ConstLabels: prometheus.Labels{"version": version.Version},
	})
	build.Set(1)
	o.reg.MustRegister(o.spawns, o.failures, o.latency, o.events, o.peers, build,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_workers_running", Help: "Workers that verify as running now.",
		}, func() float64 { _, r := counts(); return float64(r) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_workers", Help: "Worker records the sidecar tracks.",
		}, func() float64 { t, _ := counts(); return float64(t) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_warm_slots", Help: "Warm slots ready now (-1 without --warm).",
		}, func() float64 { return float64(warm()) }),
	)
	// Every label value a dashboard expects is present from the start, at zero.
	for _, m := range []worker.Mode{worker.ModeScoped, worker.ModeCgroup, worker.ModeNone, worker.ModeDegraded} {
		o.spawns.WithLabelValues(string(m))
	}
	for _, t := range []string{events.Started, events.Exited, events.OOM, events.Adopted, events.Refused, events.Lost} {
		o.events.WithLabelValues(t)
	}
	return o
}

// Handler serves the metrics in the Prometheus text format.
func (o *Observer) Handler() http.Handler {
	return promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(o.log.Handler(), slog.LevelWarn)})
}

// ErrorLog is the *log.Logger net/http wants, writing into the structured log.
func (o *Observer) ErrorLog() *log.Logger { return slog.NewLogLogger(o.log.Handler(), slog.LevelWarn) }

// Spawned records one spawn request's outcome.
func (o *Observer) Spawned(spec *worker.Spec, rc *worker.Receipt, took time.Duration, err error) {
	if err != nil {
		code := o.code(err)
		o.failures.WithLabelValues(code).Inc()
		o.log.Warn("spawn refused", "code", code, "profile", spec.Profile, "error", worker.SpecMessage(err))
		return
	}
	o.spawns.WithLabelValues(string(rc.Mode)).Inc()
	o.latency.Observe(took.Seconds())
	o.log.Info("spawn", "id", rc.ID, "pid", rc.PID, "profile", rc.Profile, "mode", rc.Mode,
		"key", rc.Key, "ms", float64(took.Microseconds())/1000)
}

// Event records one published event: every type is counted; what an operator acts on is logged (a
// started event is logged by Spawned, with its latency).
func (o *Observer) Event(e events.Event) {
	o.events.WithLabelValues(e.Type).Inc()
	switch e.Type {
	case events.Exited:
		args := []any{"id", e.ID, "pid", e.PID, "profile", e.Profile}
		switch {
		case e.ExitCode != nil:
			args = append(args, "exit_code", *e.ExitCode)
		case e.Signal != "":
			args = append(args, "signal", e.Signal)
		}
		if e.TimedOut {
			args = append(args, "timed_out", true)
		}
		if e.Initial {
			args = append(args, "initial", true)
		}
		o.log.Info("exited", args...)
	case events.OOM:
		o.log.Warn("oom kill", "id", e.ID, "pid", e.PID, "profile", e.Profile)
	case events.Adopted:
		o.log.Info("adopted", "id", e.ID, "pid", e.PID, "profile", e.Profile, "initial", e.Initial)
	case events.Refused:
		if e.ID != "" {
			o.log.Warn("record refused", "id", e.ID, "state", e.State, "reason", e.Reason)
		} else {
			o.peers.Inc()
			o.log.Warn("connection refused", "peer_pid", e.PeerPID, "uid", derefUID(e.UID), "reason", e.Reason)
		}
	case events.Lost:
		o.log.Warn("event stream lost", "reason", e.Reason)
	}
}

// Collected logs a record that left the state directory (hlaunch gc, or removed by hand).
func (o *Observer) Collected(id string) { o.log.Info("collected", "id", id) }

// Warnf logs a sidecar condition that is not a request's answer (a failed list, a warm slot, sd_notify).
func (o *Observer) Warnf(format string, args ...any) {
	o.log.Warn(strings.TrimPrefix(fmt.Sprintf(format, args...), "sidecar: "))
}

// Log is the structured log, for the lines that are not an observation of this package's (start, stop).
func (o *Observer) Log() *slog.Logger { return o.log }

// MustRegister adds collectors to the metrics (as prometheus.Registry.MustRegister).
func (o *Observer) MustRegister(cs ...prometheus.Collector) { o.reg.MustRegister(cs...) }

// RefusedUnreported counts a refused connection that is not reported as an event (the sidecar's bound on
// the refusals it reports), which Event would have counted.
func (o *Observer) RefusedUnreported() { o.peers.Inc() }

func derefUID(u *uint32) int64 {
	if u == nil {
		return -1
	}
	return int64(*u)
}
