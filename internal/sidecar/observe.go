package sidecar

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/version"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// NewLogger is the sidecar's structured log on w: one line per record, key=value (log/slog's text
// format). When w is the systemd journal (JOURNAL_STREAM names its device and inode), the time is left
// out, because the journal stamps every line itself.
func NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{}
	if isJournal(w) {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// isJournal reports whether w is the stream systemd connected to the journal (sd_journal_stream_fd's
// JOURNAL_STREAM=<dev>:<ino>).
func isJournal(w io.Writer) bool {
	f, ok := w.(*os.File)
	js := os.Getenv("JOURNAL_STREAM")
	if !ok || js == "" {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && js == strconv.FormatUint(sys.Dev, 10)+":"+strconv.FormatUint(sys.Ino, 10)
}

// observer is what the sidecar tells its operator: the structured log of each start, stop, spawn,
// refusal, exit, re-adoption and collection, and the same facts as Prometheus metrics (GET /v1/metrics).
// The registry is the server's own, not the library's global one: two servers in one process (the tests)
// keep their counts apart.
type observer struct {
	log *slog.Logger
	reg *prometheus.Registry

	spawns   *prometheus.CounterVec // started workers, by placement mode
	failures *prometheus.CounterVec // spawns that started nothing, by error code
	latency  prometheus.Histogram   // a spawn request's time to its answer, successful ones
	events   *prometheus.CounterVec // published events, by type
	peers    prometheus.Counter     // refused connections

	limited   *prometheus.CounterVec // refusals at a limit, by bound (limits, limitedAt)
	limitMu   sync.Mutex
	limitLogs map[string]*limitLog // bound -> when it was last logged, and what was refused since
}

// spawnBuckets run from a millisecond (a spawn on an idle host, docs/benchmarks.md) to seconds (the tail
// under load, a systemd job that waits).
var spawnBuckets = []float64{.001, .002, .004, .008, .016, .032, .064, .128, .256, .512, 1, 2, 4, 8}

// newObserver registers the metrics; counts reports the records the watcher knows and how many run, warm
// how many warm slots are ready (-1: no pool).
func newObserver(l *slog.Logger, counts func() (int, int), warm func() int) *observer {
	o := &observer{
		log: l,
		reg: prometheus.NewRegistry(),
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

// handler serves the metrics in the Prometheus text format.
func (o *observer) handler() http.Handler {
	return promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(o.log.Handler(), slog.LevelWarn)})
}

// errorLog is the *log.Logger net/http wants, writing into the structured log.
func (o *observer) errorLog() *log.Logger { return slog.NewLogLogger(o.log.Handler(), slog.LevelWarn) }

// spawned records one spawn request's outcome.
func (o *observer) spawned(spec *worker.Spec, rc *worker.Receipt, took time.Duration, err error) {
	if err != nil {
		code := Code(err)
		o.failures.WithLabelValues(code).Inc()
		o.log.Warn("spawn refused", "code", code, "profile", spec.Profile, "error", worker.SpecMessage(err))
		return
	}
	o.spawns.WithLabelValues(string(rc.Mode)).Inc()
	o.latency.Observe(took.Seconds())
	o.log.Info("spawn", "id", rc.ID, "pid", rc.PID, "profile", rc.Profile, "mode", rc.Mode,
		"key", rc.Key, "ms", float64(took.Microseconds())/1000)
}

// event records one published event: every type is counted; what an operator acts on is logged (a
// started event is logged by spawned, with its latency).
func (o *observer) event(e events.Event) {
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

// collected logs a record that left the state directory (hlaunch gc, or removed by hand).
func (o *observer) collected(id string) { o.log.Info("collected", "id", id) }

// warnf logs a sidecar condition that is not a request's answer (a failed list, a warm slot, sd_notify).
func (o *observer) warnf(format string, args ...any) {
	o.log.Warn(strings.TrimPrefix(fmt.Sprintf(format, args...), "sidecar: "))
}

func derefUID(u *uint32) int64 {
	if u == nil {
		return -1
	}
	return int64(*u)
}
