package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// spawn starts one worker for peer uid with the sidecar's bookkeeping (its slot of --max-workers, tickets,
// metrics, health). before, when not nil, is called with the worker's id before it is launched.
func (s *Server) spawn(ctx context.Context, uid uint32, spec worker.Spec, stdio worker.Stdio, before func(string) error) (*worker.Receipt, error) {
	release, err := s.workers.Acquire(uid)
	if err != nil {
		s.obs.LimitedAt(s.workers.Label(err), uid)
		return nil, err
	}
	ticket := s.beginSpawn()
	began := time.Now()
	var id string
	if s.peers != nil {
		// The peer's uid is on disk before the worker can exist, so that a restarted sidecar counts the
		// worker against uid's share again.
		next := before
		before = func(wid string) error {
			if err := s.peers.Put(wid, uid); err != nil {
				return err
			}
			id = wid
			if next != nil {
				return next(wid)
			}
			return nil
		}
	}
	rc, err := s.startWorker(ctx, spec, stdio, before)
	s.obs.Spawned(&spec, rc, time.Since(began), err)
	if rc == nil && id != "" {
		s.peers.Forget(id)
	}
	s.endSpawn(ticket, rc, release)
	s.noteSpawn(err)
	return rc, err
}

// peerUID is the uid of the peer that sent r, as its connection's credentials say; peerlimit.UnknownUID when they
// could not be read (such a peer is refused before any handler runs).
func peerUID(r *http.Request) uint32 {
	if a := connAuthFrom(r.Context()); a != nil {
		return a.peer.UID
	}
	return peerlimit.UnknownUID
}

// writeReceipt answers a spawn: 201 with the receipt (replay: a repeat of an idempotent spawn).
func writeReceipt(w http.ResponseWriter, rc *worker.Receipt, replay bool) {
	w.Header().Set("Location", "/v1/workers/"+rc.ID)
	if replay {
		w.Header().Set(headerIdemReplay, "true")
	}
	writeJSON(w, http.StatusCreated, rc)
}

// Bounds of GET /v1/events?heartbeat=DUR.
const (
	DefaultHeartbeat = 15 * time.Second
	MinHeartbeat     = time.Second
	MaxHeartbeat     = 60 * time.Second
)

// parseHeartbeat is the heartbeat query parameter: a duration within MinHeartbeat..MaxHeartbeat; empty is
// DefaultHeartbeat.
func parseHeartbeat(v string) (time.Duration, error) {
	d, err := parseDuration("heartbeat", v, DefaultHeartbeat)
	if err != nil {
		return 0, err
	}
	if d < MinHeartbeat || d > MaxHeartbeat {
		return 0, fmt.Errorf("%w: heartbeat %q: want %s to %s", worker.ErrInvalid, v, MinHeartbeat, MaxHeartbeat)
	}
	return d, nil
}
