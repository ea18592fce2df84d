package sidecar

import (
	"context"
	"time"

	"github.com/hlaunch/hlaunch/launcher"
)

// Record states (launcher.Record.State).
const (
	stateRunning = "running"
	stateExited  = "exited"
)

// transition returns the events for one record given the state the sidecar last knew (known=false: never
// seen). It is pure so that every path of the restart semantics is table-tested.
func transition(prev string, known bool, r launcher.Record, initial bool) []Event {
	if known && prev == r.State {
		return nil
	}
	switch r.State {
	case stateRunning:
		// never seen (a restart, or a CLI spawn), or back from another state: tracked from now on
		return []Event{eventFor(EventAdopted, r, initial)}
	case stateExited:
		var evs []Event
		if r.OOMKilled {
			evs = append(evs, eventFor(EventOOM, r, initial))
		}
		return append(evs, eventFor(EventExited, r, initial))
	default: // foreign-boot, foreign-machine, recycled, unverified: never signalled, reported once
		e := eventFor(EventRefused, r, initial)
		e.Reason = r.State
		if r.Reason != "" {
			e.Reason = r.State + ": " + r.Reason
		}
		return []Event{e}
	}
}

// settleTimeout bounds how long an exit is held back waiting for the shim's exit record.
const settleTimeout = 5 * time.Second

// settled reports whether r's state is final enough to report: an exited record has its status, or its
// shim is gone (then the status will never come, e.g. the shim was killed). Launcher.Wait uses the same rule.
func settled(r launcher.Record, alive func(int) bool) bool {
	if r.State != stateExited {
		return true
	}
	return r.ExitCode != nil || r.Signal != "" || r.ShimPID == 0 || !alive(r.ShimPID)
}

// poll lists every record once, updates the view, and publishes what changed. It holds listMu exclusively so
// that a spawn in flight (which holds it shared) is either fully before this list (its started event is out
// and the id is in the view) or fully after it: a fresh worker is never reported as adopted.
func (s *Server) poll(ctx context.Context, initial bool) error {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	recs, err := s.b.List(ctx)
	now := s.now()
	s.mu.Lock()
	s.lastPoll, s.pollErr = now, err
	if err != nil {
		s.mu.Unlock()
		return err
	}
	var evs []Event
	seen := make(map[string]struct{}, len(recs))
	for _, r := range recs {
		seen[r.ID] = struct{}{}
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
		evs = append(evs, transition(prev, known, r, initial)...)
		s.view[r.ID] = r.State
	}
	for id := range s.view {
		if _, ok := seen[id]; !ok {
			delete(s.view, id) // the record was removed (hlaunch gc, or by hand): nothing left to report
		}
	}
	for id := range s.pending {
		if _, ok := seen[id]; !ok {
			delete(s.pending, id)
		}
	}
	s.mu.Unlock()
	s.events.publish(evs...)
	return nil
}

// watch polls until ctx ends. Polling List is the one mechanism that sees every change (a shim's exit record,
// a worker started by the CLI, a record removed) without depending on the state directory's layout.
func (s *Server) watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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

// noteStarted records a worker this sidecar just started; the caller holds listMu shared.
func (s *Server) noteStarted(rc *launcher.Receipt) {
	s.mu.Lock()
	s.view[rc.ID] = stateRunning
	s.mu.Unlock()
	s.events.publish(eventFor(EventStarted, launcher.Record{Receipt: *rc, State: stateRunning}, false))
}

// counts returns how many records the view holds and how many of them run.
func (s *Server) counts() (total, running int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.view {
		if st == stateRunning {
			running++
		}
	}
	return len(s.view), running
}
