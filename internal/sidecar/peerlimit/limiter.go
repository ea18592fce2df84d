package peerlimit

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Errors of a slot refused; the sidecar answers them 429 too_many and 503 busy.
var (
	// ErrTooMany: the peer's uid already holds its share of connections, event streams or running workers.
	ErrTooMany = errors.New("too many: over this uid's share")
	// ErrBusy: the sidecar holds as many connections, event streams or running workers as it serves at once.
	ErrBusy = errors.New("busy: the sidecar is at its limit")
)

// UnknownUID counts the connections whose peer credentials could not be read: they share one bucket, like
// any uid's, and are refused (403) on their first request.
const UnknownUID = ^uint32(0)

// AdoptedUID is the bucket of the running workers no peer's spawn is known for (started by the CLI in the
// same state directory, or adopted after a restart without their peer store file): they count against the
// total, never against a peer's share.
const AdoptedUID = ^uint32(0) - 1

// Limiter counts what each peer uid holds (connections, or event streams) against a total and a per-uid
// bound, and keeps a reserve of the total for the uids it is made for (root and the sidecar's own uid: the
// gateway), so that the other uids together cannot take all of it. The zero value is not usable; make one
// with New.
type Limiter struct {
	what          string // "connections", "event streams": the refusal names it
	total, perUID int
	keptFor       []uint32 // the uids that may use the reserve; none: no reserve

	mu     sync.Mutex
	held   int
	others int // held by uids not in keptFor
	byUID  map[uint32]int
}

// New makes a limiter of what ("connections", "event streams", "running workers") with total slots, perUID
// for each uid, and a reserve (reserve) that only the uids keptFor may use.
func New(what string, total, perUID int, keptFor ...uint32) *Limiter {
	return &Limiter{what: what, total: total, perUID: perUID, keptFor: keptFor, byUID: map[uint32]int{}}
}

// reserve is how many of the total only the keptFor uids may hold: one uid's share (so the gateway's whole
// share is kept for it), but never more than half the total, so that a small total (set by flag, or
// lowered by Budget) still serves the others. Called with mu held.
func (l *Limiter) reserve() int {
	if len(l.keptFor) == 0 {
		return 0
	}
	return min(l.perUID, l.total/2)
}

// Acquire takes one slot for uid. It fails with ErrTooMany when uid already holds perUID, and with ErrBusy
// when every peer together holds total, or when uid is not one the reserve is kept for and such uids
// together hold all but the reserve: the per-uid bound is checked first, so a flood from one uid is told it
// is the one over its share. release gives the slot back; it may be called more than once.
func (l *Limiter) Acquire(uid uint32) (release func(), err error) {
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

// Hold takes one slot for uid whatever the bounds say: for what already exists (an adopted worker), which
// a bound can count but not refuse. A peer uid's slot counts against its share as Acquire's would;
// AdoptedUID's count as the reserve's holders do, against the total only.
func (l *Limiter) Hold(uid uint32) (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := uid == AdoptedUID || slices.Contains(l.keptFor, uid)
	l.held++
	if !kept {
		l.others++
	}
	l.byUID[uid]++
	var once sync.Once
	return func() { once.Do(func() { l.put(uid, kept) }) }
}

func (l *Limiter) put(uid uint32, kept bool) {
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
func (l *Limiter) flag() string {
	switch l.what {
	case "connections":
		return "conns"
	case "running workers":
		return "workers"
	}
	return "streams"
}

// Counts returns how many slots are held in all and by uid.
func (l *Limiter) Counts(uid uint32) (all, byUID int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.byUID[uid]
}

// SetTotal changes the total bound (Budget's count, before serving).
func (l *Limiter) SetTotal(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total = n
}

// Label names the bound err says was reached, as the metrics and the log name it: "conns", "conns_per_uid",
// "streams", "streams_per_uid".
func (l *Limiter) Label(err error) string {
	if errors.Is(err, ErrTooMany) {
		return l.flag() + "_per_uid"
	}
	return l.flag()
}
