package launcher

import (
	"context"
	"path/filepath"
	"time"

	"github.com/hlaunch/hlaunch/internal/pidsignal"
	"github.com/hlaunch/hlaunch/internal/state"
)

// exitLockWait bounds the wait for a worker's lock before its exit record is written anyway: a record
// written unlocked may lose a concurrent writer's fields, a record not written loses the end.
const exitLockWait = 10 * time.Second

// workerLock is the worker's lock file, beside its record in the workers directory (reachable by the
// launcher's uid only): every whole-cgroup signal holds it from before its freeze until after its thaw
// (fingerprint.Handle.SetLock, internal/pidsignal.Tree), and every write of the worker's exit record holds
// it from its read to its write (updateExit), in the CLI, the sidecar and the shim alike.
func workerLock(workers, id string) string { return filepath.Join(workers, id+".lock") }

// updateExit rewrites the worker's exit record under its lock: it reads what is there now (written by
// any of the shim, stop and a lost shim's reader), lets merge change it, and writes it back unless merge
// says there is nothing to write. So the writer that comes second merges into the first's record instead
// of overwriting it.
func updateExit(workers, id string, merge func(ex *exitRecord) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), exitLockWait)
	defer cancel()
	if unlock, err := pidsignal.LockFile(ctx, workerLock(workers, id)); err == nil {
		defer unlock()
	}
	d, err := state.Open(workers)
	if err != nil {
		return err
	}
	var ex exitRecord
	_ = d.Read(id+".exit", &ex) // none yet: the zero record
	if !merge(&ex) {
		return nil
	}
	return d.Write(id+".exit", ex, true)
}
