package sidecar

import (
	"context"
	"errors"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// transition returns the events for one record given the state the sidecar last knew (known=false: never
// seen). It is pure so that every path of the restart semantics is table-tested.
func transition(prev fingerprint.State, known bool, r worker.Record, initial bool) []events.Event {
	if known && prev == r.State {
		return nil
	}
	switch r.State {
	case fingerprint.Running:
		// never seen (a restart, or a CLI spawn), or back from another state: tracked from now on
		return []events.Event{events.For(events.Adopted, r, initial)}
	case fingerprint.Exited:
		var evs []events.Event
		if r.OOMKilled {
			evs = append(evs, events.For(events.OOM, r, initial))
		}
		return append(evs, events.For(events.Exited, r, initial))
	case worker.StateCorrupt, worker.StateUnknownVersion:
		e := events.For(events.Corrupt, r, initial)
		e.Reason = string(r.State) + ": " + r.RecordError
		return []events.Event{e}
	default: // foreign-boot, foreign-machine, recycled, unverified: never signalled, reported once
		e := events.For(events.Refused, r, initial)
		e.Reason = string(r.State)
		if r.Reason != "" {
			e.Reason = string(r.State) + ": " + r.Reason
		}
		return []events.Event{e}
	}
}

// settleTimeout bounds how long an exit is held back waiting for the shim's exit record.
const settleTimeout = 5 * time.Second

// settled reports whether r's state is final enough to report: any state but exited, and an exit that has
// settled (worker.Record.ExitSettled, the rule Launcher.Wait uses).
func settled(r worker.Record, alive func(worker.Receipt) bool) bool {
	return r.State != fingerprint.Exited || r.ExitSettled(alive)
}

// viewEntry is what the sidecar last knew of one worker. gen is the spawn generation at which a spawn put it
// there (0 when the watcher did): a list that started before that spawn finished may not show it yet.
type viewEntry struct {
	state fingerprint.State
	gen   uint64
}

// isFinal reports whether r, once reported, can never be reported in another state: an exited worker whose
// status is known (or will never be), and the refusal states that no later verification undoes (the boot,
// the machine, a recycled PID). Such records are not read again by later polls; everything else, running
// and unverified workers, is verified on every poll.
func isFinal(r worker.Record, alive func(worker.Receipt) bool) bool {
	switch r.State {
	case fingerprint.Exited:
		return settled(r, alive)
	case fingerprint.ForeignBoot, fingerprint.ForeignMachine, fingerprint.Recycled:
		return true
	}
	return false
}

// list returns the records a poll must look at, and the ids of every record (final ones included). Final
// records are skipped: a gateway that ran 10,000 cron jobs has 10,000 exited records, and verifying each of
// them at every poll would cost the sidecar more CPU than its spawns (ADR 0006). A record removed between
// the listing and its read is skipped too.
func (s *Server) list(ctx context.Context) ([]worker.Record, map[string]struct{}, error) {
	ids, err := s.b.IDs(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	final := make(map[string]struct{}, len(s.final))
	for id := range s.final {
		final[id] = struct{}{}
	}
	s.mu.Unlock()
	seen := make(map[string]struct{}, len(ids))
	var recs []worker.Record
	for _, id := range ids {
		seen[id] = struct{}{}
		if _, ok := final[id]; ok {
			continue
		}
		r, err := s.b.Get(ctx, id)
		if errors.Is(err, worker.ErrNotFound) {
			delete(seen, id)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, r)
	}
	return recs, seen, nil
}

// poll reads every record that can still change, updates the view, and publishes what changed. It never
// blocks spawns while it reads (1,000 running workers take a while). Instead, a record the view does not know is held back
// while any spawn that began before it was seen is still in flight: that spawn may be the one that wrote it,
// and will announce it as started. So a fresh worker is never reported as adopted, and a worker started
// elsewhere (a restart, the CLI) is adopted as soon as no such spawn is pending.
func (s *Server) poll(ctx context.Context, initial bool) error {
	s.mu.Lock()
	gen0 := s.gen
	s.mu.Unlock()
	recs, seen, err := s.list(ctx)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastPoll, s.pollErr = now, err
	close(s.polled) // every poll, even a failed one: a waiter reads its own record again
	s.polled = make(chan struct{})
	if err != nil {
		return err
	}
	oldest := s.nextTicket // the oldest spawn still in flight, or nextTicket when none is
	for t := range s.inflight {
		oldest = min(oldest, t)
	}
	var evs []events.Event
	for _, r := range recs {
		if !settled(r, s.alive) {
			// The leader is gone but its shim has not written the exit status yet: report the exit once,
			// with its code, a poll or two later - unless the shim never writes it.
			first, ok := s.pending[r.ID]
			if !ok {
				s.pending[r.ID] = now
				continue
			}
			if now.Sub(first) < settleTimeout {
				continue
			}
		}
		delete(s.pending, r.ID)
		prev, known := s.view[r.ID]
		if !known {
			issued, seenBefore := s.unknown[r.ID]
			if !seenBefore {
				issued = s.nextTicket
				s.unknown[r.ID] = issued
			}
			if oldest < issued {
				continue // a spawn that may have written this record has not answered yet
			}
			delete(s.unknown, r.ID)
		}
		evs = append(evs, transition(prev.state, known, r, initial)...)
		s.view[r.ID] = viewEntry{state: r.State}
		s.trackSlot(r.ID, r.State == fingerprint.Running)
		s.noteScope(r)
		if isFinal(r, s.alive) {
			s.final[r.ID] = struct{}{}
		}
	}
	for id := range s.final {
		if _, ok := seen[id]; !ok {
			delete(s.final, id) // removed (hlaunch gc)
		}
	}
	for id, v := range s.view {
		if _, ok := seen[id]; !ok && v.gen <= gen0 {
			delete(s.view, id) // the record was removed (hlaunch gc, or by hand): nothing left to report
			s.trackSlot(id, false)
			s.obs.Collected(id)
		}
	}
	for cg, id := range s.scopes {
		if _, ok := s.view[id]; !ok {
			delete(s.scopes, cg)
		}
	}
	for id := range s.pending {
		if _, ok := seen[id]; !ok {
			delete(s.pending, id)
		}
	}
	for id := range s.unknown {
		if _, ok := seen[id]; !ok {
			delete(s.unknown, id)
		}
	}
	// Published under mu, so that a spawn's started event and the watcher's events for the same worker
	// come out in the order their view changes were made.
	s.events.Publish(evs...)
	return nil
}

// watch lists the records until ctx ends: after a change in Config.WatchDir (inotify), at most every
// PollInterval; while an exit or a record is held back, every PollInterval; and in any case every SlowPoll,
// which catches what writes no file (a PID recycled, a shim killed with its worker). Without inotify (the
// directory does not exist yet, or no WatchDir) it polls every PollInterval and keeps trying to watch.
func (s *Server) watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	var (
		w       *dirWatch
		wake    <-chan struct{}
		woken   bool
		last    = s.now()
		lastErr string
	)
	for {
		if w == nil && s.cfg.WatchDir != "" {
			if nw, err := watchDir(ctx, s.cfg.WatchDir); err == nil {
				w, wake = nw, nw.wake
				woken = true // anything may have changed before the watch began
			}
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-wake:
			if !ok {
				w, wake = nil, nil
			}
			woken = true
			continue // polled at the next tick: bursts of writes (50 spawns at once) cost one list
		case <-t.C:
		}
		s.mu.Lock()
		held := len(s.pending) > 0 || len(s.unknown) > 0
		idle := w != nil && !woken && !held && s.now().Sub(last) < s.cfg.SlowPoll
		if idle {
			s.idleTicks++
		}
		s.mu.Unlock()
		if idle {
			continue
		}
		woken, last = false, s.now()
		err := s.poll(ctx, false)
		switch {
		case err != nil && err.Error() != lastErr && ctx.Err() == nil:
			s.logf("sidecar: listing workers: %v", err) // logged once per distinct error, not every tick
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
		}
	}
}

// nextPoll returns a channel closed once the watcher's next poll is done: taken before a record is read,
// so that no change between that read and the wait on it is missed.
func (s *Server) nextPoll() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polled
}

// waitEnd blocks until worker ref has ended and its exit has settled (the rule Launcher.Wait uses), or ctx
// ends. It reads the record once, then again after each of the watcher's polls, which follow the changes
// in the state directory (inotify) and the slow poll: waiters cost no timer of their own, however many
// there are.
func (s *Server) waitEnd(ctx context.Context, ref string) (worker.Record, error) {
	for {
		next := s.nextPoll()
		rec, err := s.b.Get(ctx, ref)
		if err != nil {
			return worker.Record{}, err
		}
		if rec.State != fingerprint.Running && rec.ExitSettled(s.alive) {
			return rec, nil
		}
		select {
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-next:
		}
	}
}

// beginSpawn registers a spawn in flight and returns its ticket for endSpawn.
func (s *Server) beginSpawn() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.nextTicket
	s.nextTicket++
	s.inflight[t] = struct{}{}
	return t
}

// endSpawn ends a spawn; when it started a worker (rc != nil), the worker enters the view, keeps the
// spawn's slot (release) until it ends, and its started event is published, in one step under mu. A spawn
// that started nothing gives its slot back.
func (s *Server) endSpawn(ticket uint64, rc *worker.Receipt, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, ticket)
	if rc == nil {
		release()
		return
	}
	if old, ok := s.slots[rc.ID]; ok {
		old()
	}
	s.slots[rc.ID] = release
	s.gen++
	s.view[rc.ID] = viewEntry{state: fingerprint.Running, gen: s.gen}
	s.noteScope(worker.Record{Receipt: *rc, State: fingerprint.Running})
	delete(s.unknown, rc.ID)
	s.events.Publish(events.For(events.Started, worker.Record{Receipt: *rc, State: fingerprint.Running}, false))
}

// trackSlot keeps worker id's slot of --max-workers while it runs: a running worker the sidecar did not
// start in this process (adopted) takes one in its peer's share when the peer store names the uid that
// asked for it (a spawn before a restart), else in peerlimit.AdoptedUID's bucket; an ended or removed one gives its
// slot back, and its peer's uid is forgotten. Called with mu held.
func (s *Server) trackSlot(id string, running bool) {
	release, ok := s.slots[id]
	switch {
	case running && !ok:
		uid := peerlimit.AdoptedUID
		if s.peers != nil {
			if u, known := s.peers.Get(id); known {
				uid = u
			}
		}
		s.slots[id] = s.workers.Hold(uid)
	case !running && ok:
		release()
		delete(s.slots, id)
		if s.peers != nil {
			s.peers.Forget(id)
		}
	}
}

// counts returns how many records the view holds and how many of them run.
func (s *Server) counts() (total, running int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.view {
		if v.state == fingerprint.Running {
			running++
		}
	}
	return len(s.view), running
}
