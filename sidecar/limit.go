package sidecar

import (
	"fmt"
	"sync"
)

// Defaults of the limits on what the socket's peers may hold at once (docs/sidecar.md, "Limits"). A gateway
// holds a few event streams and tens of concurrent requests; each default is far above that and far below
// what would take the sidecar's descriptors or memory.
const (
	DefaultMaxConns         = 1024
	DefaultMaxConnsPerUID   = 128
	DefaultMaxStreams       = 128
	DefaultMaxStreamsPerUID = 16
)

// RetryAfter is the Retry-After (seconds) of a 429 or 503 answer to a peer over a limit: a slot frees as
// soon as any of its holder's connections or streams closes.
const RetryAfter = 1

// unknownUID counts the connections whose peer credentials could not be read: they share one bucket, like
// any uid's, and are refused (403) on their first request.
const unknownUID = ^uint32(0)

// limiter counts what each peer uid holds (connections, or event streams) against a total and a per-uid
// bound. The zero value is not usable; make one with newLimiter.
type limiter struct {
	what          string // "connections", "event streams": the refusal names it
	total, perUID int

	mu    sync.Mutex
	held  int
	byUID map[uint32]int
}

func newLimiter(what string, total, perUID int) *limiter {
	return &limiter{what: what, total: total, perUID: perUID, byUID: map[uint32]int{}}
}

// acquire takes one slot for uid. It fails with ErrTooMany when uid already holds perUID, and with ErrBusy
// when every peer together holds total: the per-uid bound is checked first, so a flood from one uid is told
// it is the one over its share. release gives the slot back; it may be called more than once.
func (l *limiter) acquire(uid uint32) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byUID[uid] >= l.perUID {
		return nil, fmt.Errorf("%w: uid %d holds %d %s, the most one uid may (--max-%s-per-uid)", ErrTooMany, uid, l.byUID[uid], l.what, l.flag())
	}
	if l.held >= l.total {
		return nil, fmt.Errorf("%w: the sidecar holds %d %s, the most it serves at once (--max-%s)", ErrBusy, l.held, l.what, l.flag())
	}
	l.held++
	l.byUID[uid]++
	var once sync.Once
	return func() { once.Do(func() { l.put(uid) }) }, nil
}

func (l *limiter) put(uid uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held--
	if l.byUID[uid]--; l.byUID[uid] <= 0 {
		delete(l.byUID, uid) // a map of every uid ever seen would grow with each one
	}
}

// flag is the stem of the limit's flags: --max-conns, --max-streams.
func (l *limiter) flag() string {
	if l.what == "connections" {
		return "conns"
	}
	return "streams"
}

// counts returns how many slots are held in all and by uid.
func (l *limiter) counts(uid uint32) (all, byUID int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.byUID[uid]
}
