package integration

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// A parent that root's hlaunch made (and marked trusted.hlaunch, which only root can read) is, to a
// non-root hlaunch, not writable: the launch and doctor say so in the same words, not "was not created by
// hlaunch". Nothing starts.
func TestNonRootRootMadeParentNotWritable(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	w := nobodyEnv(t)
	// root's launch makes and marks the parent; its worker keeps it in use.
	root := exec.Command(hlaunchBin, "--root", w.Root, "--state-dir", t.TempDir(), "exec", "-p", "b", "--detach",
		"--scope", "cgroup", "--cgroup-parent", w.Parent, "--", "sleep", "300")
	if r := runResult(t, root); r.Code != 0 {
		t.Fatalf("root's launch: exit %d: %s", r.Code, r.Stderr)
	}
	r := w.asNobody("exec", "-p", "b", "--scope", "cgroup", "--cgroup-parent", w.Parent, "--", "true")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 125 || len(lines) != 1 || !strings.Contains(r.Stderr, "not writable") || !strings.Contains(r.Stderr, w.Parent) ||
		strings.Contains(r.Stderr, "not created by hlaunch") {
		t.Fatalf("non-root launch under root's parent: exit %d, stderr %q; want 125 and one line saying %s is not writable", r.Code, r.Stderr, w.Parent)
	}
	// doctor names the same condition for the default parent (root-made or missing: not writable either
	// way), or, where systemd owns the tree, that the caller is in no delegated subtree (ADR 0002); never
	// "not created by hlaunch".
	d := decodeDoctor(t, w.asNobody("doctor", "--json"))
	if d.Delegated.OK || !(strings.Contains(d.Delegated.Detail, "not writable") || strings.Contains(d.Delegated.Detail, "systemd manages")) ||
		strings.Contains(d.Delegated.Detail, "not created by hlaunch") {
		t.Errorf("doctor as uid 65534: delegated %+v, want not writable", d.Delegated)
	}
}

// For a non-root caller doctor's "system bus" line says the system manager is not used (scopes go to the
// user manager), instead of showing the user bus's answer under the system bus's name.
func TestDoctorNonRootSystemBusLine(t *testing.T) {
	requireRoot(t)
	w := nobodyEnv(t)
	r := w.asNobody("doctor", "--json")
	var d struct {
		SystemBus Check `json:"system_bus"`
		UserBus   Check `json:"user_bus"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil {
		t.Fatalf("doctor --json: %v: %q", err, r.Stdout)
	}
	if d.SystemBus.OK || !strings.Contains(d.SystemBus.Detail, "not used by uid 65534") || d.SystemBus.Detail == d.UserBus.Detail {
		t.Fatalf("system bus line for uid 65534: %+v (user bus %+v)", d.SystemBus, d.UserBus)
	}
}

// Check is a doctor line in JSON.
type Check struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}
