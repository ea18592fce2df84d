package sidecar

import (
	"context"
	"time"

	"github.com/hlaunch/hlaunch/launcher"
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
		switch {
		case err != nil && err.Error() != lastErr && ctx.Err() == nil:
			s.logf("sidecar: collecting ended workers: %v", err)
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
		}
	}
}
