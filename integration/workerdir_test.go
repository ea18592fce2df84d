package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// workerDir is a directory for a test's markers and gates that every worker can write, whatever uid it
// runs as (a root launcher's worker runs as its home's owner): below tmpBase, mode 0777, removed at the
// end. It holds nothing a boundary depends on.
func workerDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(tmpBase, "wd-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	must(t, os.Chmod(d, 0o777))
	return d
}

// stableFDs is the GODEBUG under which a Go reporter's own descriptors are the same wherever it runs: the
// runtime's container-aware GOMAXPROCS keeps its cgroup's CPU quota files open where it finds them (the v1
// cpu hierarchy, a v2 cgroup with the cpu controller), which depends on the worker's cgroups and view, not
// on what it inherited. Tests that compare a worker's descriptors with a reference run set it in both.
const stableFDs = "GODEBUG=containermaxprocs=0,updatemaxprocs=0"

// detachedReport starts the child reporter detached (`hlaunch exec ARGS --detach --log ... -- child report
// CHECKS`, behind prefix), waits for its end and decodes what it wrote to its log (kept in the state
// directory: root's, as the shim that writes it).
func (e *env) detachedReport(prefix, execArgs []string, checks ...string) childReport {
	e.t.Helper()
	must(e.t, os.MkdirAll(e.State, 0o700))
	log := filepath.Join(e.State, "report-"+randHex(4)+".log")
	args := append(append(append([]string{"exec"}, execArgs...), "--detach", "--log", log, "--", selfBin, "child", "report"), checks...)
	r := e.runIn("", prefix, args...)
	if r.Code != 0 {
		e.t.Fatalf("detached: exit %d %s", r.Code, r.Stderr)
	}
	var rc struct{ ID string }
	must(e.t, json.Unmarshal([]byte(r.Stdout), &rc))
	if w := e.run("wait", "--timeout", "60s", rc.ID); w.Code != 0 {
		e.t.Fatalf("wait %s: exit %d %s", rc.ID, w.Code, w.Stderr)
	}
	b, err := os.ReadFile(log)
	must(e.t, err)
	return decodeReport(e.t, string(b))
}
