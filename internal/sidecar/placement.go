package sidecar

import (
	"context"
	"fmt"
	"os"

	"github.com/hlaunch/hlaunch/internal/doctor"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// PlacementProblem says why the placement a sidecar is configured for (its default --scope, --user and
// --require-scope) cannot be made on the host r describes, or "" when it can. --scope auto without
// --require-scope always can: it runs degraded, and says so per worker.
func PlacementProblem(r doctor.Report, d worker.Spec, root bool) string {
	switch d.Scope {
	case worker.ScopeSystemd:
		bus, name := r.SystemBus, "system"
		if !root || d.UserManager {
			bus, name = r.UserBus, "user"
		}
		if !bus.OK {
			return fmt.Sprintf("--scope systemd: no %s manager answers: %s", name, bus.Detail)
		}
	case worker.ScopeCgroup:
		if !r.Delegated.OK {
			return "--scope cgroup: no writable cgroup parent: " + r.Delegated.Detail
		}
	case "", worker.ScopeAuto:
		if d.RequireScope && !r.RestartSafe {
			return "--require-scope: no restart-safe placement: " + r.AutoReason
		}
	}
	return ""
}

// checkPlacement asks the backend's doctor whether the configured placement can be made, for health:
// "degraded" with the reason from start-up on, not only after a spawn failed. Without a doctor (the
// test fake) or a configured placement it does nothing.
func (s *Server) checkPlacement(ctx context.Context) {
	d, ok := s.b.(doctorer)
	if !ok || s.cfg.Placement == nil {
		return
	}
	rep, err := d.Doctor(ctx)
	if err != nil {
		return
	}
	problem := PlacementProblem(rep, *s.cfg.Placement, os.Geteuid() == 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case problem != "":
		s.spawnErr = problem
		s.placementBad = true
	case s.placementBad:
		s.spawnErr, s.placementBad = "", false
	}
}
