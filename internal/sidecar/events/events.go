package events

import (
	"sync"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Event types on GET /v1/events.
const (
	Started = "started" // a spawn through this sidecar succeeded
	Exited  = "exited"  // a worker ended; exit_code or signal say how
	OOM     = "oom"     // a worker was killed by the OOM killer (sent before its exited event)
	Adopted = "adopted" // a running worker this sidecar did not start (a restart, or the CLI) is tracked
	Refused = "refused" // a record that does not verify (foreign boot or machine, recycled, unverified),
	// or a connection from a peer that may not use the socket
	Corrupt = "corrupt" // a record that cannot be read or verified (state corrupt or unknown-version): never signalled
	Lost    = "lost"    // the requested backlog is gone or this stream fell behind: re-list, then reconnect
	// Heartbeat is sent on a stream that had nothing else to send for its heartbeat period; its seq is
	// 0 (it is not in the ring and is never replayed).
	Heartbeat = "heartbeat"
)

// Event is one line of the NDJSON stream. Seq increases by one per event for the life of the process; a
// client that reconnects with ?since=<last seq> gets what it missed while the ring still holds it.
type Event struct {
	Seq       uint64            `json:"seq"`
	Type      string            `json:"type"`
	ID        string            `json:"id,omitempty"`
	Time      string            `json:"time"` // RFC 3339 with nanoseconds, UTC
	State     fingerprint.State `json:"state,omitempty"`
	PID       int               `json:"pid,omitempty"`
	Profile   string            `json:"profile,omitempty"`
	Key       string            `json:"key,omitempty"`
	ExitCode  *int              `json:"exit_code,omitempty"`
	Signal    string            `json:"signal,omitempty"`
	OOMKilled bool              `json:"oom_killed,omitempty"`
	TimedOut  bool              `json:"timed_out,omitempty"`
	// Initial marks events from the start-up reconciliation: they describe records that existed before this
	// sidecar process started, so a client may already know them.
	Initial bool `json:"initial,omitempty"`
	// UID and PeerPID identify a refused connection.
	UID     *uint32 `json:"uid,omitempty"`
	PeerPID int32   `json:"peer_pid,omitempty"`
	Reason  string  `json:"reason,omitempty"`
}

// For fills the worker fields of an event of type typ from a record.
func For(typ string, r worker.Record, initial bool) Event {
	return Event{
		Type: typ, ID: r.ID, State: r.State, PID: r.PID, Profile: r.Profile, Key: r.Key,
		ExitCode: r.ExitCode, Signal: r.Signal, OOMKilled: r.OOMKilled, TimedOut: r.TimedOut, Initial: initial,
	}
}

// Broker fans events out to subscribers and keeps the last size of them for replay. A subscriber that
// cannot keep up is cut off (its channel closed after a lost event) rather than slowing the sidecar down.
type Broker struct {
	mu     sync.Mutex
	seq    uint64
	ring   []Event // oldest first, at most size
	size   int
	subs   map[*Subscriber]struct{}
	now    func() time.Time
	closed bool
	// Observe, when set before the first Publish, sees every event as it is published (the sidecar's log
	// and metrics).
	Observe func(Event)
}

// Subscriber is one stream's queue of events.
type Subscriber struct {
	ch   chan Event
	lost bool
}

// C is the subscriber's queue; it is closed when the stream ends (Unsubscribe, Close, or the subscriber fell behind).
func (s *Subscriber) C() <-chan Event { return s.ch }

// Lost reports that the subscriber fell behind and was cut off; read it once C is closed.
func (s *Subscriber) Lost() bool { return s.lost }

// NewBroker returns a broker that keeps the last size events, stamping them with now.
func NewBroker(size int, now func() time.Time) *Broker {
	return &Broker{size: size, subs: map[*Subscriber]struct{}{}, now: now}
}

// Publish stamps and delivers events in order.
func (b *Broker) Publish(evs ...Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range evs {
		b.seq++
		e.Seq = b.seq
		if e.Time == "" {
			e.Time = b.now().UTC().Format(time.RFC3339Nano)
		}
		if len(b.ring) == b.size {
			copy(b.ring, b.ring[1:])
			b.ring = b.ring[:b.size-1]
		}
		b.ring = append(b.ring, e)
		if b.Observe != nil {
			b.Observe(e)
		}
		for s := range b.subs {
			select {
			case s.ch <- e:
			default:
				b.dropLocked(s)
			}
		}
	}
}

// dropLocked ends a subscriber that fell behind; its reader sees the channel close and writes a lost event.
func (b *Broker) dropLocked(s *Subscriber) {
	s.lost = true
	delete(b.subs, s)
	close(s.ch)
}

// Subscribe registers a subscriber and returns the backlog after since (all held events when since is 0,
// none when replay is false). gap reports that events after since were already dropped from the ring.
func (b *Broker) Subscribe(since uint64, replay bool, buf int) (s *Subscriber, backlog []Event, gap bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s = &Subscriber{ch: make(chan Event, buf)}
	if b.closed {
		close(s.ch)
		return s, nil, false
	}
	b.subs[s] = struct{}{}
	if !replay {
		return s, nil, false
	}
	if len(b.ring) > 0 && since+1 < b.ring[0].Seq {
		gap = true
	}
	if since > b.seq { // a seq from an earlier sidecar process: everything may be new to this client
		gap = true
		since = 0
	}
	for _, e := range b.ring {
		if e.Seq > since {
			backlog = append(backlog, e)
		}
	}
	return s, backlog, gap
}

// Unsubscribe ends s's stream.
func (b *Broker) Unsubscribe(s *Subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.ch)
	}
}

// Close ends every stream (server shutdown).
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		close(s.ch)
	}
}

// LastSeq returns the sequence number of the newest event.
func (b *Broker) LastSeq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Subscribers returns how many streams are subscribed.
func (b *Broker) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
