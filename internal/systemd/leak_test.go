package systemd

import (
	"os"
	"testing"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// TestMain fails the package's run when a test leaves a goroutine running.
func TestMain(m *testing.M) { os.Exit(testutil.RunWithLeakCheck(m)) }
