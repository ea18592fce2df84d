package launcher_test

import (
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// A launcher started with SIGHUP and SIGINT ignored (nohup, or a shell's background job) gives its shim
// those dispositions; the shim catches them, and a caught signal is reset by execve. A detached worker
// must not inherit the ignore (as one started before the shim's catch is in place would): its SIGHUP
// and SIGINT would be deaf, a trap on them would never run, and `hlaunch signal -s HUP` would do nothing
// (TestLegacyRow under nohup). The worker reads its own SigIgn.
func TestDetachedWorkerDoesNotInheritIgnoredSignals(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT)
	t.Cleanup(func() { signal.Reset(syscall.SIGHUP, syscall.SIGINT) })
	for i := range 5 {
		out := filepath.Join(t.TempDir(), "sigign")
		rc := w.start(spec(`grep '^SigIgn:' /proc/$$/status > ` + out))
		if rec := w.wait(rc.ID); rec.State != "exited" || rec.ExitCode == nil || *rec.ExitCode != 0 {
			t.Fatalf("run %d: the reporter: %+v", i, rec)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(b), "SigIgn:")), 16, 64)
		if err != nil {
			t.Fatalf("run %d: %q: %v", i, b, err)
		}
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
			if mask&(1<<(sig-1)) != 0 {
				t.Errorf("run %d: the detached worker starts with %v ignored (SigIgn %016x): the launcher's ignore reached it", i, sig, mask)
			}
		}
	}
}
