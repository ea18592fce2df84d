package launcher

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Stop sends SIGTERM to the whole worker, waits up to grace for its cgroup to empty, then kills the whole
// cgroup. It returns the final record, and an error unless the cgroup is verified empty.
func (l *Launcher) Stop(ctx context.Context, ref string, grace time.Duration) (worker.Record, error) {
	h, rc, ident, err := l.authorize(ref)
	if errors.Is(err, worker.ErrNotRunning) {
		// Idempotent, as systemctl stop and docker stop are: an ended worker is stopped; its final record.
		l.removeEnded(rc, ident)
		return l.Get(ctx, refOf(rc, ref))
	}
	if err != nil {
		return worker.Record{}, err
	}
	defer h.Close()
	killed, err := stopHandle(ctx, h, rc.Sandbox, grace)
	if err != nil {
		return worker.Record{}, err
	}
	if rc.ID != "" {
		l.recordStopped(rc, killed)
	}
	l.removeEnded(rc, ident)
	rec, err := l.Get(ctx, refOf(rc, ref))
	if err != nil {
		return worker.Record{}, err
	}
	if rec.State == fingerprint.Running {
		return rec, fmt.Errorf("%w: still running after stop", worker.ErrNotEmpty)
	}
	return rec, nil
}

// removeEnded removes an ended worker's raw cgroup when it is empty (its shim, killed with it, could not):
// the one removal Stop, gc and a lost shim's end use. It reports false only when the worker's cgroup is
// there and could not be removed (it has members); a cgroup that is not the worker's is never touched.
func (l *Launcher) removeEnded(rc worker.Receipt, ident fingerprint.Identity) bool {
	if rc.Mode != worker.ModeCgroup || ident.Cgroup == "" {
		return true
	}
	g, err := l.workerGroup(rc, ident)
	if err != nil {
		return true // not the worker's cgroup (any more)
	}
	return g.Delete() == nil
}

// stopHandle is the stop sequence on a verified worker: SIGTERM to every member (but a sandbox's
// forwarding init), up to grace for the cgroup (or, without one, the leader) to empty, then SIGKILL to all.
// It reports whether the kill was needed, and fails unless the worker is verified gone.
func stopHandle(ctx context.Context, h *fingerprint.Handle, sandbox bool, grace time.Duration) (killed bool, err error) {
	// A cgroup that vanishes under us (systemd collects an empty scope) is a worker that is over.
	if err := signalAll(ctx, h, sandbox, syscall.SIGTERM); errors.Is(err, fingerprint.ErrNotRunning) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("stop: SIGTERM: %w", err)
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	err = h.WaitEmpty(gctx)
	cancel()
	if err == nil {
		return false, nil
	}
	if err := h.SignalAll(ctx, syscall.SIGKILL); errors.Is(err, fingerprint.ErrNotRunning) {
		return true, nil
	} else if err != nil {
		return true, fmt.Errorf("stop: kill: %w", err)
	}
	kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := h.WaitEmpty(kctx); err != nil {
		return true, fmt.Errorf("%w: %w", worker.ErrNotEmpty, err)
	}
	return true, nil
}

// recordStopped writes (or completes) the exit record when the shim could not (it died with the cgroup).
// Under the worker's lock (records.UpdateExit): a shim that recorded the end first keeps its record, and one that
// records it after merges (shim.Life.finish).
func (l *Launcher) recordStopped(rc worker.Receipt, killed bool) {
	_ = records.UpdateExit(l.WorkersDir(), rc.ID, func(ex *records.ExitRecord) bool {
		if ex.EndedAt != "" {
			return false // the shim recorded the end itself
		}
		// Nothing, or only the leader's status (the shim died with the tree before the end): complete it.
		ex.EndedAt, ex.Stopped = time.Now().UTC().Format(time.RFC3339Nano), true
		if ex.ExitCode == nil && ex.Signal == "" {
			ex.Signal = "SIGTERM"
			if killed {
				ex.Signal = "SIGKILL"
			}
		}
		if err := records.FinishLedger(l.LedgerPath, rc.ID, *ex); err != nil {
			ex.LedgerError = err.Error() // the ledger lacks the end: the worker's record says why
		}
		return true
	})
}
