//go:build guest

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The non-root host kinds of the guest lane (scripts/guest/vm/hostkinds.sh): TestGuestUser* run as alice,
// a user with linger, from a service of her own manager (a gateway of hers); TestGuestNoManager* run as
// bob, who has no manager at all. Built only into the guest's test binary and run only for those kinds.

// alice: --scope auto is a scope in her own manager, from the child's first instruction; a detached
// worker is scoped, verified and stopped whole; doctor says so.
func TestGuestUserScopes(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("run as the linger user (the guest lane's alice), not root")
	}
	e := newEnv(t)
	d := decodeDoctor(t, e.run("doctor", "--json"))
	if d.AutoChoice != "scoped" || !d.UserBus.OK || d.SystemBus.OK || !strings.Contains(d.SystemBus.Detail, "not used") {
		t.Fatalf("doctor as a linger user: %+v", d)
	}
	rep, _ := e.report([]string{"-p", "b", "--scope", "auto"})
	if len(rep.Cgroup) != 1 || !strings.Contains(rep.Cgroup[0], "/user@") || !strings.HasSuffix(rep.Cgroup[0], ".scope") {
		t.Fatalf("first cgroup read of an auto child: %q, want a scope of the user's manager", rep.Cgroup)
	}
	// --scope cgroup with no parent named: her whole tree (user@1001.service) is her manager's, which
	// marks none of its Delegate=yes units (systemd 252), so hlaunch makes nothing there and says so in one
	// line; with the parent named (her service's own cgroup, delegated by the lane) the worker is there.
	r := e.run("exec", "-p", "b", "--scope", "cgroup", "--", "true")
	if r.Code != 125 || !strings.Contains(r.Stderr, "user manager's own tree") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("--scope cgroup as a linger user: exit %d stderr %q; want 125 and one line", r.Code, r.Stderr)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	must(t, err)
	ownPath := strings.TrimPrefix(strings.TrimSpace(string(own)), "0::")
	rep, _ = e.report([]string{"-p", "b", "--scope", "cgroup", "--cgroup-parent", ownPath + "/hlaunch"})
	if want := "0::" + ownPath + "/hlaunch/w-"; len(rep.Cgroup) != 1 || !strings.HasPrefix(rep.Cgroup[0], want) {
		t.Errorf("first cgroup read of a --scope cgroup child: %q, want %s...", rep.Cgroup, want)
	}
	checkNonRootBasics(t, e, "auto")
	rc := e.detach([]string{"--scope", "auto"}, "sleep", "300")
	if rc.Mode != "scoped" || rc.Unit == "" {
		t.Fatalf("detached auto worker: %+v", rc)
	}
	if rec, r := e.record(rc.ID); r.Code != 0 || rec.State != "running" {
		t.Fatalf("status: exit %d %+v %s", r.Code, rec, r.Stderr)
	}
	if r := e.run("stop", "--grace", "2s", rc.ID); r.Code != 0 || alive(rc.PID) {
		t.Fatalf("stop: exit %d %s (alive %v)", r.Code, r.Stderr, alive(rc.PID))
	}
}

// bob: no manager, no writable cgroup. auto runs degraded with one warning; --scope systemd and
// --require-scope are refused in one line and start nothing; doctor says degraded.
func TestGuestNoManagerDegraded(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("run as the user without a manager (the guest lane's bob), not root")
	}
	e := newEnv(t)
	r := e.run("doctor", "--json")
	if d := decodeDoctor(t, r); r.Code != 1 || d.AutoChoice != "degraded" || d.RestartSafe {
		t.Fatalf("doctor without a manager: exit %d %+v", r.Code, d)
	}
	rep, res := e.report([]string{"-p", "b", "--scope", "auto"})
	if w := strings.Count(res.Stderr, "warning"); w != 1 || rep.Env["B_MARKER"] != "b" {
		t.Fatalf("degraded auto: %d warnings in %q, env %v", w, res.Stderr, rep.Env)
	}
	checkNonRootBasics(t, e, "none")
	marker := t.TempDir() + "/ran"
	for _, flags := range [][]string{{"--scope", "systemd"}, {"--scope", "auto", "--require-scope"}} {
		args := append(append([]string{"exec", "-p", "b"}, flags...), "--", "touch", marker)
		r := e.run(args...)
		if r.Code == 0 || len(strings.Split(strings.TrimSpace(r.Stderr), "\n")) != 1 {
			t.Errorf("%v: exit %d stderr %q, want a refusal in one line", flags, r.Code, r.Stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%v: the target ran", flags)
		}
	}
}

// alice's own sidecar (as a gateway of hers would run it): --scope auto spawns scopes in her manager, and
// a spawned worker is verified and stopped through the API.
func TestGuestUserSidecar(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("run as the linger user (the guest lane's alice), not root")
	}
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--scope", "auto")
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("b", "sleep", "300"), 201, &rc)
	if rc.Mode != "scoped" || rc.Unit == "" {
		t.Fatalf("sidecar spawn as a linger user: %+v", rc)
	}
	var r receipt
	p.mustDo("POST", "/v1/workers/"+rc.ID+"/stop", `{"grace":"2s"}`, 200, &r)
	if r.State != "exited" || alive(rc.PID) {
		t.Fatalf("stop through the sidecar: %s, alive=%v", r.State, alive(rc.PID))
	}
}

// checkNonRootBasics: as this user, --scope none gives a child b's environ only, and a --sandbox child
// (with the given placement) sees neither profile a nor any process but its own.
func checkNonRootBasics(t *testing.T, e *env, sandboxScope string) {
	t.Helper()
	rep, _ := e.report([]string{"-p", "b", "--scope", "none"})
	if rep.Env["B_MARKER"] != "b" || rep.Env["A_MARKER"] != "" || rep.UID != os.Geteuid() {
		t.Errorf("--scope none child: uid %d env %v", rep.UID, rep.Env)
	}
	aEnv := filepath.Join(e.Root, "profiles", "a", ".env")
	r := e.run("exec", "-p", "b", "--sandbox", "--scope", sandboxScope, "--", "/bin/sh", "-c",
		"cat "+aEnv+" 2>/dev/null && echo LEAK; echo procs: /proc/[0-9]*; echo pid=$$")
	if r.Code != 0 {
		t.Fatalf("--sandbox --scope %s: exit %d: %s", sandboxScope, r.Code, r.Stderr)
	}
	var pid string
	for _, l := range strings.Split(r.Stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "pid="); ok {
			pid = v
		}
	}
	if strings.Contains(r.Stdout, "LEAK") || !strings.Contains(r.Stdout, "procs: /proc/1 /proc/"+pid+"\n") {
		t.Errorf("--sandbox --scope %s view:\n%s", sandboxScope, r.Stdout)
	}
}
