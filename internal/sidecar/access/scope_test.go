package access

import "testing"

// A peer outside the sidecar's cgroup namespace is told by the names in its path alone.
func TestGeneratedScopeIn(t *testing.T) {
	for cg, want := range map[string]string{
		"/../../system.slice/hlaunch-b-0123456789ab.scope": "w-0123456789ab",
		"/../user.slice/hlaunch-0123456789ab.scope/inner":  "w-0123456789ab",
		"/../..":                                 "",
		"/../app.slice/hermes-worker-7.scope":    "",
		"/../x/hlaunch-b-0123456789ab.scope-not": "",
	} {
		if got := GeneratedScopeIn(cg); got != want {
			t.Errorf("GeneratedScopeIn(%q) = %q, want %q", cg, got, want)
		}
	}
}
