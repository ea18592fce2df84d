// Package testutil holds the helpers hlaunch's tests share: the capability checks that skip a test (and
// fail it under CI=true, where nothing may skip), the test's own cgroup parent and its removal, a temporary
// hermes root, the goroutine-leak check, and the owner tags that let a run remove what a killed run left
// outside t.TempDir (OwnedTempDir, SweepStale). It is imported only from _test.go files, and imports only
// hlaunch's leaf packages (internal/linux, internal/pidsignal), so every package's tests can use it.
package testutil

import (
	"testing"

	"go.uber.org/goleak"
)

// RunWithLeakCheck runs the package's tests and fails the run when a goroutine the tests started is still
// running after the last one: a watcher, a relay or a bus reader that outlives its owner is a leak in a
// daemon that runs for months (the sidecar). It returns the exit code for os.Exit.
func RunWithLeakCheck(m *testing.M) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := goleak.Find(); err != nil {
		println("testutil: goroutines left running after the tests:", err.Error())
		return 1
	}
	return 0
}
