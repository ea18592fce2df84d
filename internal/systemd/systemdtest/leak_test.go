package systemdtest

import (
	"os"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestMain fails the package's run when a test leaves a goroutine running: the manager's waiter and a
// parked process's reaper must end with their owner.
func TestMain(m *testing.M) { os.Exit(testutil.RunWithLeakCheck(m)) }
