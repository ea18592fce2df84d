package sidecar

import (
	"sync"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Event types on GET /v1/events.
const (
	EventStarted = "started" // a spawn through this sidecar succeeded
	EventExited  = "exited"  // a worker ended; exit_code or signal say how
	EventOOM     = "oom"     // a worker was killed by the OOM killer (sent before its exited event)
	EventAdopted = "adopted" // a running worker this sidecar did not start (a restart, or the CLI) is tracked
	EventRefused = "refused" // a record that does not verify (foreign boot or machine, recycled, unverified),
	// or a connection from a peer that may not use the socket
	EventCorrupt = "corrupt" // a record that cannot be read or verified (state corrupt or unknown-version): never signalled
	EventLost    = "lost"    // the requested backlog is gone or this stream fell behind: re-list, then reconnect
	// EventHeartbeat is sent on a stream that had nothing else to send for its heartbeat period; its seq is
	// 0 (it is not in the ring and is never replayed).
	EventHeartbeat = "heartbeat"
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

// eventFor fills the worker fields of an event from a record.
func eventFor(typ string, r worker.Record, initial bool) Event {
	return Event{
		Type: typ, ID: r.ID, State: r.State, PID: r.PID, Profile: r.Profile, Key: r.Key,
		ExitCode: r.ExitCode, Signal: r.Signal, OOMKilled: r.OOMKilled, TimedOut: r.TimedOut, Initial: initial,
	}
}

// broker fans events out to subscribers and keeps the last ringSize of them for replay. A subscriber that
// cannot keep up is cut off (its channel closed after a lost event) rather than slowing the sidecar down.
type broker struct {
	mu     sync.Mutex
	seq    uint64
	ring   []Event // oldest first, at most ringSize
	size   int
	subs   map[*subscriber]struct{}
	now    func() time.Time
	closed bool
	// observe, when set, sees every event as it is published (the log and the metrics: observer.event).
	observe func(Event)
}

type subscriber struct {
	ch   chan Event
	lost bool
}

func newBroker(size int, now func() time.Time) *broker {
	return &broker{size: size, subs: map[*subscriber]struct{}{}, now: now}
}

// publish stamps and delivers events in order.
func (b *broker) publish(evs ...Event) {
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
		if b.observe != nil {
			b.observe(e)
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
func (b *broker) dropLocked(s *subscriber) {
	s.lost = true
	delete(b.subs, s)
	close(s.ch)
}

// subscribe registers a subscriber and returns the backlog after since (all held events when since is 0,
// none when replay is false). gap reports that events after since were already dropped from the ring.
func (b *broker) subscribe(since uint64, replay bool, buf int) (s *subscriber, backlog []Event, gap bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s = &subscriber{ch: make(chan Event, buf)}
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

func (b *broker) unsubscribe(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.ch)
	}
}

// close ends every stream (server shutdown).
func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		close(s.ch)
	}
}

// lastSeq returns the sequence number of the newest event.
func (b *broker) lastSeq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}
