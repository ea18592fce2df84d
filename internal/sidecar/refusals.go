package sidecar

import (
	"sync"
	"time"
)

// Refused connections are reported (a log line, a refused event) at most refusalRate a second after a
// burst of refusalBurst: a worker that connects in a loop would otherwise fill the event ring with them
// - evicting the exits a reconnecting gateway replays with ?since= - drop the gateway's live stream, and
// write a log line per connection. The metric counts every refusal.
const (
	refusalRate  = 10
	refusalBurst = 20
)

// refusalBudget is a token bucket over the refusals reported; it counts those it held back.
type refusalBudget struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	skipped int
}

// take reports whether a refusal at now may be reported and, when it may, how many were held back since
// the last one reported.
func (b *refusalBudget) take(now time.Time) (ok bool, skipped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = refusalBurst
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(refusalBurst, b.tokens+d.Seconds()*refusalRate)
	}
	b.last = now
	if b.tokens < 1 {
		b.skipped++
		return false, 0
	}
	b.tokens--
	skipped, b.skipped = b.skipped, 0
	return true, skipped
}
