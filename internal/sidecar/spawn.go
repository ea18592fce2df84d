package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// spawn starts one worker with the sidecar's bookkeeping (tickets, metrics, health). before, when not nil,
// is called with the worker's id before it is launched.
func (s *Server) spawn(ctx context.Context, spec worker.Spec, stdio worker.Stdio, before func(string) error) (*worker.Receipt, error) {
	ticket := s.beginSpawn()
	began := time.Now()
	rc, err := s.startWorker(ctx, spec, stdio, before)
	s.obs.spawned(&spec, rc, time.Since(began), err)
	s.endSpawn(ticket, rc)
	s.noteSpawn(err)
	return rc, err
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
