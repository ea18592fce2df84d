package integration

import (
	"os"
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
