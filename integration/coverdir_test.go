package integration

import (
	"os"
	"strings"
	"testing"
)

// TestCoverDirStaysWithTheRoles: GOCOVERDIR, where a `make cover` build's own processes (the CLI, the
// init stub, the shim, the sidecar) write their counters (internal/coverdir), reaches no worker on any
// path that starts one: in the foreground, unsandboxed (held at its exec, or cloned into its cgroup) and
// sandboxed (the init stub), detached (the shim, and the shim's stub), and through the sidecar. The
// launcher is given GOCOVERDIR in its environment, as make cover's suite has it; the workers' environs,
// read from inside them, must not name it or its directory.
func TestCoverDirStaysWithTheRoles(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	hermesHome(t, e) // a sandboxed worker of a home that is not root's, as in production
	dir := os.Getenv("GOCOVERDIR")
	if dir == "" {
		dir = t.TempDir() // a build without coverage ignores it; it still must not reach a worker
	}
	e.Launcher = append(e.Launcher, "GOCOVERDIR="+dir)
	check := func(name string, rep childReport) {
		t.Helper()
		for k, v := range rep.Env {
			if k == "GOCOVERDIR" || strings.Contains(v, dir) {
				t.Errorf("%s: the worker's environ has %s=%s", name, k, v)
			}
		}
		if strings.Contains(rep.PID1Env, "GOCOVERDIR") {
			t.Errorf("%s: the sandbox's init (the stub) shows GOCOVERDIR in /proc/1/environ: %q", name, rep.PID1Env)
		}
		if len(rep.Env) == 0 {
			t.Errorf("%s: the worker reported no environ", name)
		}
	}
	cg := []string{"--scope", "cgroup", "--cgroup-parent", e.Parent}
	for name, args := range map[string][]string{
		"foreground none":    {"-p", "b", "--scope", "none"},
		"foreground cgroup":  append([]string{"-p", "b"}, cg...),
		"foreground sandbox": append([]string{"-p", "b", "--sandbox"}, cg...),
	} {
		rep, _ := e.report(args)
		check(name, rep)
	}
	check("detached cgroup", e.detachedReport(nil, append([]string{"-p", "b"}, cg...)))
	check("detached sandbox", e.detachedReport(nil, append([]string{"-p", "b", "--sandbox"}, cg...)))
	p := startSidecarProc(t, e, scSocketDir(t)+"/s.sock")
	check("sidecar", p.report(map[string]any{}))
	check("sidecar sandbox", p.report(map[string]any{"sandbox": true}))
}
