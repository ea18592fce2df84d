package launcher

import (
	"os"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestMain lets the test binary serve as the init stub and the shim (Config.Self defaults to
// /proc/self/exe: a detached or sandboxed launch in a test re-executes this binary), then fails the
// package's run when a test leaves a goroutine running.
func TestMain(m *testing.M) {
	MaybeRunInternal()
	os.Exit(testutil.RunWithLeakCheck(m))
}
