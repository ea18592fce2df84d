package integration

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The red team's third round (issue 15): the boundaries landed last session attacked as a hostile worker
// would (docs/security.md, "The red team's guards"). Each test passes while the boundary holds.

// An unprivileged launcher with a supplementary group gives its sandboxed workers that group (the user
// namespace denies setgroups: TestRedteamUnprivSandboxUsesLauncherGroups). doctor says so before any
// launch: its kept_groups check is not OK and names the group, in --json and in the text; a launcher
// without supplementary groups is told none is kept. On the old code doctor said nothing of it.
func TestRedteam3DoctorWarnsKeptGroups(t *testing.T) {
	requireRoot(t)
	w := nobodyEnv(t)
	_, gid := throwawayUser(t)
	g := strconv.Itoa(gid)
	doctor := func(groups string, args ...string) result {
		full := append([]string{"--reuid=65534", "--regid=65534", groups, "--", w.bin, "--root", w.Root, "--state-dir", w.State, "doctor"}, args...)
		cmd := exec.Command("setpriv", full...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_RUNTIME_DIR=/nonexistent/run"}
		return runResult(t, cmd)
	}
	var d struct {
		KeptGroups *Check `json:"kept_groups"`
	}
	r := doctor("--groups="+g, "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || d.KeptGroups == nil {
		t.Fatalf("doctor --json of a launcher in group %s: %v, no kept_groups: %q %q", g, err, r.Stdout, r.Stderr)
	}
	if d.KeptGroups.OK || !strings.Contains(d.KeptGroups.Detail, g) || strings.Contains(d.KeptGroups.Detail, "\n") {
		t.Errorf("doctor --json of a launcher in group %s: kept_groups %+v, want not OK, one line naming %s", g, *d.KeptGroups, g)
	}
	r = doctor("--groups=" + g)
	if line := lineStarting(r.Stdout, "kept groups"); !strings.Contains(line, "no: ") || !strings.Contains(line, g) {
		t.Errorf("doctor of a launcher in group %s: kept groups line %q, want \"no: ...\" naming %s:\n%s", g, line, g, r.Stdout)
	}
	d.KeptGroups = nil
	r = doctor("--clear-groups", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &d); err != nil || d.KeptGroups == nil || !d.KeptGroups.OK {
		t.Errorf("doctor --json of a launcher without supplementary groups: kept_groups %+v (%v), want OK: %q", d.KeptGroups, err, r.Stderr)
	}
}

// lineStarting is the first line of out that starts with prefix ("" if none).
func lineStarting(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
