package launcher

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// refusal turns a verdict that does not authorize a signal into the matching error.
func refusal(v fingerprint.Verdict) error {
	switch v.State {
	case fingerprint.Exited:
		return fmt.Errorf("%w: %s", worker.ErrNotRunning, v.Reason)
	case fingerprint.Unverified:
		return fmt.Errorf("%w: %s", worker.ErrUnverified, v.Reason)
	default:
		return fmt.Errorf("%w: %s: %s", worker.ErrRefused, v.State, v.Reason)
	}
}

// refusalOr sorts an Authorize answer: nil with a handle; the refusal's own error (exit 3 or 4, zero
// signals sent) when the identity does not verify; a wrapped error when facts could not be read.
func refusalOr(h *fingerprint.Handle, v fingerprint.Verdict, err error) error {
	var re *fingerprint.RefusalError
	switch {
	case errors.As(err, &re):
		return refusal(re.Verdict)
	case err != nil:
		return fmt.Errorf("verify: %w", err)
	case h == nil:
		return refusal(v)
	}
	return nil
}

// authorize pins the worker for signalling, or says why not: the identity must verify as running (pinned
// through fingerprint.Authorize) and its cgroup must be the one hlaunch recorded for it (owns). Zero
// signals are sent on refusal.
func (l *Launcher) authorize(ref string) (*fingerprint.Handle, worker.Receipt, fingerprint.Identity, error) {
	rc, ident, err := l.Load(ref)
	if err != nil {
		return nil, rc, ident, err
	}
	h, v, err := fingerprint.Authorize(l.Src, ident)
	if err = refusalOr(h, v, err); err != nil {
		return nil, rc, ident, err
	}
	if err := l.owns(rc, ident); err != nil {
		h.Close()
		return nil, rc, ident, err
	}
	if rc.ID != "" {
		h.SetLock(records.WorkerLock(l.WorkersDir(), rc.ID))
	}
	return h, rc, ident, nil
}

// Signal sends sig to the worker's leader, or with all to every process in its cgroup, only when its
// identity verifies as running.
func (l *Launcher) Signal(ctx context.Context, ref string, sig syscall.Signal, all bool) error {
	h, rc, _, err := l.authorize(ref)
	if err != nil {
		return err
	}
	defer h.Close()
	if all {
		return signalAll(ctx, h, rc.Sandbox, sig)
	}
	if err := h.SignalLeader(sig); errors.Is(err, fingerprint.ErrNotRunning) {
		// The worker runs (its tree lives) but the one process this signal was for is gone.
		return fmt.Errorf("%w: %s: leader PID %d", worker.ErrLeaderExited, refOf(rc, ref), rc.PID)
	} else if err != nil {
		return fmt.Errorf("signal: %w", err)
	}
	return nil
}

// signalAll sends sig to every process of a verified worker. A sandboxed worker's leader is its init,
// which forwards what it gets to the target; it is left out (for any signal but SIGKILL) so that the target,
// reached directly, does not hear the signal a second time.
func signalAll(ctx context.Context, h *fingerprint.Handle, sandbox bool, sig syscall.Signal) error {
	if sandbox {
		return h.SignalAllButLeader(ctx, sig)
	}
	return h.SignalAll(ctx, sig)
}
