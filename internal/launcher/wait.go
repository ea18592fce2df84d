package launcher

import (
	"context"
	"fmt"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/shim"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Wait blocks until the worker has ended (or ctx ends) and returns its final record. It reads the record
// again after each change in the state directory (inotify) and at the end of the worker's shim or leader
// (pidfds), not on a timer; only where inotify is not to be had, or for a worker whose shim is gone (whose
// end and deadline nothing signals), does it poll. A record that cannot be read
// or verified (Damaged) is ErrRefused at once: its worker's end cannot be known.
func (l *Launcher) Wait(ctx context.Context, ref string) (worker.Record, error) {
	w := newWakeup(l.WorkersDir())
	defer w.close()
	watched := false
	for {
		rec, err := l.Get(ctx, ref)
		if err != nil {
			return worker.Record{}, err
		}
		if worker.Damaged(rec.State) {
			return rec, fmt.Errorf("%w: worker %s: record is %s (%s): its end cannot be known", worker.ErrRefused, rec.ID, rec.State, rec.RecordError)
		}
		if rec.State != fingerprint.Running && rec.ExitSettled(ShimAlive) {
			return rec, nil
		}
		if rec.ShimLost {
			// Nothing signals the end of a worker whose shim is gone, nor its deadline, which the next reader
			// enforces (orphan.go): read it again on a timer.
			select {
			case <-ctx.Done():
				return rec, ctx.Err()
			case <-time.After(waitPoll):
			}
			continue
		}
		if !watched {
			// After the first read, so that a process that ended before its pidfd was opened is seen by
			// the read that follows the (failed or immediately ready) watch.
			watched = true
			w.watchPID(rec.ShimPID)
			w.watchPID(rec.PID)
			continue
		}
		if err := w.wait(ctx); err != nil {
			return rec, err
		}
	}
}

// ShimAlive reports whether the worker's shim still runs: its PID names a live process (not a zombie)
// and, when the receipt has the shim's start time, that process started then, so a recycled PID is never
// taken for the shim. It only decides whether an exit record may still come (Wait, the sidecar's watcher);
// nothing is ever signalled on its word.
func ShimAlive(rc worker.Receipt) bool {
	alive, _ := shim.Probe(rc)
	return alive
}
