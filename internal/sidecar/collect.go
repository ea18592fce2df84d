package sidecar

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/hlaunch/hlaunch/internal/launcher"
)

// collector is the optional retention part of a backend (*launcher.Launcher has it).
type collector interface {
	GC(ctx context.Context, r launcher.Retention) (launcher.GCReport, error)
}

// collect applies Config.Retention every GCInterval until ctx ends, in its own goroutine: a spawn never
// waits for it. A failure is logged once per distinct error; the removed records leave the watcher's view
// at its next poll.
func (s *Server) collect(ctx context.Context, c collector) {
	t := time.NewTicker(s.cfg.GCInterval)
	defer t.Stop()
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r := *s.cfg.Retention
		r.KeepParent = true // the next spawn goes there
		_, err := c.GC(ctx, r)
		// Give the pages of what was just dropped back to the kernel now rather than when the runtime's
		// scavenger gets to them: a sidecar runs for months, and its RSS should say what it holds.
		debug.FreeOSMemory()
		switch {
		case err != nil && err.Error() != lastErr && ctx.Err() == nil:
			s.logf("sidecar: collecting ended workers: %v", err)
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
		}
	}
}
