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
