package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
)

// limitLogEvery is the least time between two log lines about one bound: a flood is told in a line a
// while with its count, not a line a connection.
const limitLogEvery = 10 * time.Second

// limitLog is what LimitedAt remembers of one bound between two log lines.
type limitLog struct {
	last    time.Time
	refused int // since the last line
}

// Limits registers the metrics of the bounds: what is held now, and the refusals by bound.
func (o *Observer) Limits(conns, streams, workers *peerlimit.Limiter) {
	o.limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hlaunch_sidecar_limited_total",
		Help: "Requests refused at a limit: conns, conns_per_uid, streams, streams_per_uid, workers, workers_per_uid (answered 503 or 429), unanswered (closed: too many refusals in flight).",
	}, []string{"limit"})
	for _, l := range []string{"conns", "conns_per_uid", "streams", "streams_per_uid", "workers", "workers_per_uid", "unanswered"} {
		o.limited.WithLabelValues(l)
	}
	o.limitLogs = map[string]*limitLog{}
	o.reg.MustRegister(o.limited,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_connections", Help: "Connections served now (not counting those being refused).",
		}, func() float64 { n, _ := conns.Counts(0); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_event_streams", Help: "GET /v1/events streams open now.",
		}, func() float64 { n, _ := streams.Counts(0); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_worker_slots", Help: "Running workers counted against --max-workers (spawns in flight included).",
		}, func() float64 { n, _ := workers.Counts(0); return float64(n) }),
	)
}

// LimitedAt counts one refusal at bound label for uid, and logs it unless that bound was logged less than
// limitLogEvery ago; the next line says how many were refused in between.
func (o *Observer) LimitedAt(label string, uid uint32) {
	o.limited.WithLabelValues(label).Inc()
	o.limitMu.Lock()
	ll := o.limitLogs[label]
	if ll == nil {
		ll = &limitLog{}
		o.limitLogs[label] = ll
	}
	ll.refused++
	now := time.Now()
	if now.Sub(ll.last) < limitLogEvery {
		o.limitMu.Unlock()
		return
	}
	n := ll.refused
	ll.last, ll.refused = now, 0
	o.limitMu.Unlock()
	o.log.Warn("limit reached", "limit", label, "uid", int64(uid), "refused", n)
}
