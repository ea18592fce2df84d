package launcher

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/shim"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// A worker whose shim is gone (an unsandboxed worker of the launcher's uid can SIGKILL its parent
// once the receipt is out) is supervised by nothing of its own any more. Its record holds its deadline
// (Receipt.DeadlineBoottimeNS, GraceNS), so whatever of hlaunch's reads the record enforces it instead:
// every read goes through Launcher.record (status, list/ps, wait, stop, gc, and the sidecar's watcher and
// API), which calls reconcileLost here. This is the one place that decides what a lost shim means
// (docs/identity.md, "A worker whose shim is gone"; docs/security.md, "Known limits").

// reconciled is a worker's record as a read answers it: verified now (record), and reconciled when its
// shim is gone (reconcileLost; read again when that ended or recorded it).
func (l *Launcher) reconciled(ctx context.Context, src fingerprint.Sources, rc worker.Receipt, ident fingerprint.Identity) (worker.Record, error) {
	rec, err := l.record(src, rc, ident)
	if err == nil && l.reconcileLost(ctx, rc, ident, &rec) {
		rec, err = l.record(src, rc, ident)
	}
	if err == nil && rec.ShimLost && rec.EndedAt != "" {
		rec.Reason = joinReason(ReasonShimLost+": its shim was gone; hlaunch recorded its end", rec.Reason)
	}
	return rec, err
}

// ReasonShimLost starts the reason of a worker whose shim is gone without recording the worker's end
// (Record.ShimLost): running, its deadline enforced by hlaunch's next reader; or exited, its end recorded
// by that reader.
const ReasonShimLost = "shim-lost"

// shimLost reports whether rec's worker has lost its shim: it had one, the shim's PID no longer names the
// process that started then (ShimAlive), or the shim is stopped (SIGSTOP: an unsandboxed worker can stop
// its parent as it can kill it) and the deadline has come, so that it enforces nothing; and its end is not
// recorded. The shim records the end before it exits, so the exit record is read again after the liveness
// check: a shim that finished just now is not taken for a lost one.
func (l *Launcher) shimLost(rec *worker.Record) bool {
	if rec.ID == "" || rec.ShimPID <= 0 || rec.EndedAt != "" {
		return false
	}
	alive, stopped := shim.Probe(rec.Receipt)
	if alive && (!stopped || rec.DeadlineBoottimeNS == 0 || worker.Boottime() < rec.DeadlineBoottimeNS) {
		return false
	}
	var ex records.ExitRecord
	if (&state.Dir{Path: l.WorkersDir()}).Read(rec.ID+".exit", &ex) == nil && ex.EndedAt != "" {
		records.ApplyExit(rec, ex)
		return false
	}
	return true
}

// reconcileLost is what a read does for a worker whose shim is gone. A live tree before its deadline runs
// on, said so (shim_lost, the deadline in the reason). A live tree past its deadline is ended now, as its
// shim would have: SIGTERM to the tree, the kill once the grace from the deadline is over, through the one
// verified signal path (authorize); the reader waits for that, at most the grace. A tree that has ended
// (killed here, by the manager's RuntimeMaxSec, or on its own) gets its end recorded, reason shim-lost,
// and its raw cgroup removed. It reports whether it changed anything on disk, so that the caller reads
// the record again.
func (l *Launcher) reconcileLost(ctx context.Context, rc worker.Receipt, ident fingerprint.Identity, rec *worker.Record) bool {
	if !l.shimLost(rec) {
		return false
	}
	rec.ShimLost = true
	switch rec.State {
	case fingerprint.Running:
	case fingerprint.Exited:
		l.recordLostEnd(rc, ident, false, false)
		return true
	default: // foreign-boot, recycled, ...: nothing of it is ours to act on
		return false
	}
	now := worker.Boottime()
	if rc.DeadlineBoottimeNS == 0 || now < rc.DeadlineBoottimeNS {
		left := "it has no deadline: it runs until stopped"
		if rc.DeadlineBoottimeNS != 0 {
			left = fmt.Sprintf("its deadline, in %s, is enforced by the next hlaunch call that reads its record",
				time.Duration(rc.DeadlineBoottimeNS-now).Round(time.Millisecond))
		}
		rec.Reason = joinReason(ReasonShimLost+": its shim is gone; "+left, rec.Reason)
		return false
	}
	h, v, err := fingerprint.Authorize(l.Src, ident)
	if refusalOr(h, v, err) != nil {
		return false // not running any more, or not verifiable: the next read sees which
	}
	defer h.Close()
	if l.owns(rc, ident) != nil {
		return false
	}
	grace := time.Duration(rc.DeadlineBoottimeNS + rc.GraceNS - now)
	killed, err := stopHandle(ctx, h, rc.Sandbox, max(0, min(grace, time.Duration(rc.GraceNS))))
	if err != nil {
		rec.Reason = joinReason(ReasonShimLost+": its shim is gone and the tree outlived the kill at its deadline: "+err.Error(), rec.Reason)
		return false
	}
	l.recordLostEnd(rc, ident, true, killed)
	return true
}

// recordLostEnd writes the end of a worker whose shim is gone: the exit record (ended now, shim_lost; when
// this reader enforced the deadline, timed out, with the signal it sent unless the shim had recorded the
// leader's status), its ledger record, and the removal of its raw cgroup. A tree that ended without this
// reader (on its own, or stopped by the manager at RuntimeMaxSec) is recorded ended when first seen so,
// with no claim on how.
func (l *Launcher) recordLostEnd(rc worker.Receipt, ident fingerprint.Identity, enforced, killed bool) {
	_ = records.UpdateExit(l.WorkersDir(), rc.ID, func(ex *records.ExitRecord) bool {
		if ex.EndedAt != "" {
			return false // recorded meanwhile (a concurrent reader)
		}
		ex.EndedAt, ex.ShimLost, ex.TimedOut = worker.Now(), true, enforced
		if ex.ExitCode == nil && ex.Signal == "" && enforced {
			ex.Signal = worker.SignalName(syscall.SIGTERM)
			if killed {
				ex.Signal = worker.SignalName(syscall.SIGKILL)
			}
		}
		if err := records.FinishLedger(l.LedgerPath, rc.ID, *ex); err != nil {
			ex.LedgerError = err.Error() // the ledger lacks the end: the worker's record says why
		}
		return true
	})
	l.removeEnded(rc, ident)
}
