package sidecar

import (
	"testing"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// A peer inside a running scoped worker's scope (or a cgroup below it) is a worker; once the worker has
// exited, its scope no longer refuses anyone.
func TestScopeOfPeer(t *testing.T) {
	s := &Server{scopes: map[string]string{}}
	w := worker.Record{Receipt: worker.Receipt{ID: "w-0123456789ab", Unit: "hermes-worker-7.scope",
		Cgroup: "/app.slice/hermes-worker-7.scope"}, State: fingerprint.Running}
	s.noteScope(w)
	s.noteScope(worker.Record{Receipt: worker.Receipt{ID: "w-1", Cgroup: "/hlaunch/w-1"}, State: fingerprint.Running})
	for cg, want := range map[string]string{
		"/app.slice/hermes-worker-7.scope":       w.ID, // a --unit name: known from the records
		"/app.slice/hermes-worker-7.scope/inner": w.ID,
		"/app.slice/hermes-worker-7.scope2":      "",
		"/app.slice":                             "",
		"/hlaunch/w-1":                           "", // a raw cgroup is told by its mark, not here
		"":                                       "",
	} {
		if got := s.scopeOf(cg); got != want {
			t.Errorf("scopeOf(%q) = %q, want %q", cg, got, want)
		}
	}
	w.State = fingerprint.Exited
	s.noteScope(w)
	if got := s.scopeOf(w.Cgroup); got != "" {
		t.Errorf("after the worker exited, scopeOf = %q", got)
	}
}
