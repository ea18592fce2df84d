package sidecar

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the limits on what the socket's peers may hold at once (docs/sidecar.md, "Limits"). A gateway
// holds a few event streams and tens of concurrent requests; each default is far above that and far below
// what would take the sidecar's descriptors or memory.
const (
	DefaultMaxConns         = 1024
	DefaultMaxConnsPerUID   = 128
	DefaultMaxStreams       = 128
	DefaultMaxStreamsPerUID = 16
	// DefaultMaxWorkers and DefaultMaxWorkersPerUID bound the workers that run at once from the sidecar's
	// spawns: each holds up to the default task and memory limits, so their number is what bounds the
	// host's PIDs and memory taken through the socket.
	DefaultMaxWorkers       = 4096
	DefaultMaxWorkersPerUID = 1024
)

// RetryAfter is the Retry-After (seconds) of a 429 or 503 answer to a peer over a limit: a slot frees as
// soon as any of its holder's connections or streams closes.
const RetryAfter = 1

// unknownUID counts the connections whose peer credentials could not be read: they share one bucket, like
// any uid's, and are refused (403) on their first request.
const unknownUID = ^uint32(0)

// adoptedUID is the bucket of the running workers no peer's spawn is known for (started by the CLI in the
// same state directory, or adopted after a restart without their peerStore file): they count against the
// total, never against a peer's share.
const adoptedUID = ^uint32(0) - 1

// limiter counts what each peer uid holds (connections, or event streams) against a total and a per-uid
// bound, and keeps a reserve of the total for the uids it is made for (root and the sidecar's own uid: the
// gateway), so that the other uids together cannot take all of it. The zero value is not usable; make one
// with newLimiter.
type limiter struct {
	what          string // "connections", "event streams": the refusal names it
	total, perUID int
	keptFor       []uint32 // the uids that may use the reserve; none: no reserve

	mu     sync.Mutex
	held   int
	others int // held by uids not in keptFor
	byUID  map[uint32]int
}

// newLimiter makes a limiter of total slots, perUID for each uid, with a reserve (reserve) that only the
// uids keptFor may use.
func newLimiter(what string, total, perUID int, keptFor ...uint32) *limiter {
	return &limiter{what: what, total: total, perUID: perUID, keptFor: keptFor, byUID: map[uint32]int{}}
}

// reserve is how many of the total only the keptFor uids may hold: one uid's share (so the gateway's whole
// share is kept for it), but never more than half the total, so that a small total (set by flag, or
// lowered by fdBudget) still serves the others. Called with mu held.
func (l *limiter) reserve() int {
	if len(l.keptFor) == 0 {
		return 0
	}
	return min(l.perUID, l.total/2)
}

// acquire takes one slot for uid. It fails with ErrTooMany when uid already holds perUID, and with ErrBusy
// when every peer together holds total, or when uid is not one the reserve is kept for and such uids
// together hold all but the reserve: the per-uid bound is checked first, so a flood from one uid is told it
// is the one over its share. release gives the slot back; it may be called more than once.
func (l *limiter) acquire(uid uint32) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byUID[uid] >= l.perUID {
		return nil, fmt.Errorf("%w: uid %d holds %d %s, the most one uid may (--max-%s-per-uid)", ErrTooMany, uid, l.byUID[uid], l.what, l.flag())
	}
	if l.held >= l.total {
		return nil, fmt.Errorf("%w: the sidecar holds %d %s, the most it serves at once (--max-%s)", ErrBusy, l.held, l.what, l.flag())
	}
	kept := slices.Contains(l.keptFor, uid)
	if r := l.reserve(); !kept && l.others >= l.total-r {
		return nil, fmt.Errorf("%w: uids other than root and the sidecar's own hold %d %s, the most they may together (--max-%s less the %d kept for root and the sidecar's uid)",
			ErrBusy, l.others, l.what, l.flag(), r)
	}
	l.held++
	if !kept {
		l.others++
	}
	l.byUID[uid]++
	var once sync.Once
	return func() { once.Do(func() { l.put(uid, kept) }) }, nil
}

// hold takes one slot for uid whatever the bounds say: for what already exists (an adopted worker), which
// a bound can count but not refuse. A peer uid's slot counts against its share as acquire's would;
// adoptedUID's count as the reserve's holders do, against the total only.
func (l *limiter) hold(uid uint32) (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := uid == adoptedUID || slices.Contains(l.keptFor, uid)
	l.held++
	if !kept {
		l.others++
	}
	l.byUID[uid]++
	var once sync.Once
	return func() { once.Do(func() { l.put(uid, kept) }) }
}

func (l *limiter) put(uid uint32, kept bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held--
	if !kept {
		l.others--
	}
	if l.byUID[uid]--; l.byUID[uid] <= 0 {
		delete(l.byUID, uid) // a map of every uid ever seen would grow with each one
	}
}

// flag is the stem of the limit's flags: --max-conns, --max-streams, --max-workers.
func (l *limiter) flag() string {
	switch l.what {
	case "connections":
		return "conns"
	case "running workers":
		return "workers"
	}
	return "streams"
}

// counts returns how many slots are held in all and by uid.
func (l *limiter) counts(uid uint32) (all, byUID int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.byUID[uid]
}

// setTotal changes the total bound (fdBudget's count, before serving).
func (l *limiter) setTotal(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total = n
}

// label names the bound err says was reached, as the metrics and the log name it: "conns", "conns_per_uid",
// "streams", "streams_per_uid".
func (l *limiter) label(err error) string {
	if errors.Is(err, ErrTooMany) {
		return l.flag() + "_per_uid"
	}
	return l.flag()
}

// limitLogEvery is the least time between two log lines about one bound: a flood is told in a line a
// while with its count, not a line a connection.
const limitLogEvery = 10 * time.Second

// limitLog is what limited remembers of one bound between two log lines.
type limitLog struct {
	last    time.Time
	refused int // since the last line
}

// limits registers the metrics of the bounds: what is held now, and the refusals by bound.
func (o *observer) limits(conns, streams, workers *limiter) {
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
		}, func() float64 { n, _ := conns.counts(0); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_event_streams", Help: "GET /v1/events streams open now.",
		}, func() float64 { n, _ := streams.counts(0); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hlaunch_sidecar_worker_slots", Help: "Running workers counted against --max-workers (spawns in flight included).",
		}, func() float64 { n, _ := workers.counts(0); return float64(n) }),
	)
}

// limitedAt counts one refusal at bound label for uid, and logs it unless that bound was logged less than
// limitLogEvery ago; the next line says how many were refused in between.
func (o *observer) limitedAt(label string, uid uint32) {
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
