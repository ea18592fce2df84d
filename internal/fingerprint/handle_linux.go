package fingerprint

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/pidsignal"
)

// Handle is pinned authority over one verified worker: a pidfd of its leader (when the leader was alive) and
// a directory fd of its cgroup (when it has one). Every signal goes through those fds, never through a PID
// number or a path, so it can only reach what Authorize verified. A Handle is not safe for concurrent use
// with Close; Close it when done.
type Handle struct {
	id     Identity
	dir    int    // cgroup directory fd, -1 when the worker has no cgroup (hermes rows)
	pidfd  int    // leader pidfd, -1 when the leader had exited at Authorize time
	lock   string // the worker's lock file (SetLock), "" for none
	closed bool
}

// Identity returns the identity this handle was authorized for.
func (h *Handle) Identity() Identity { return h.id }

// LeaderPinned reports whether the handle holds the leader's pidfd (false when the leader had already exited
// and only its cgroup lives on).
func (h *Handle) LeaderPinned() bool { return !h.closed && h.pidfd >= 0 }

// SignalLeader sends sig to the leader through its pidfd.
//
// No check-then-act window exists here: Authorize opened the pidfd first and only then checked the start
// time and cgroup membership, while the pidfd showed the process unreaped (so the PID could not have been
// reused in between). The pidfd refers to that process itself, not to its number: if it has since died and
// the number was given to a stranger, pidfd_send_signal fails with ESRCH instead of reaching the stranger.
func (h *Handle) SignalLeader(sig syscall.Signal) error {
	if h.closed {
		return errClosed
	}
	if h.pidfd < 0 {
		return fmt.Errorf("%w: leader PID %d has exited", ErrNotRunning, h.id.PID)
	}
	err := linux.PidfdSignal(h.pidfd, sig)
	if errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("%w: leader PID %d has exited", ErrNotRunning, h.id.PID)
	}
	return err
}

// SetLock names the worker's lock file: every whole-cgroup signal through this handle holds it (flock)
// from before its freeze until after its thaw (internal/pidsignal.Tree), so that signallers in other
// processes holding it too neither thaw each other's freeze nor interleave their passes. Set it before
// the handle is used.
func (h *Handle) SetLock(path string) { h.lock = path }

// SignalAll sends sig to every process of the worker through the pinned cgroup fd, the one whole-cgroup
// path (internal/pidsignal.Tree): SIGKILL writes cgroup.kill when the kernel has it (v2, 5.14+); otherwise,
// under the worker's lock (SetLock), the cgroup is frozen (cgroup.freeze, or a v1 freezer's freezer.state),
// every process of the cgroup and its descendants is signalled through a pidfd, in passes until a pass finds
// no one new, and the cgroup is thawed. A cgroup removed and re-created at the same path is never hit: the
// fd refers to the old one. A handle without a cgroup (hermes rows) signals only the leader. If the caller
// itself is in the cgroup it is skipped (even for SIGKILL: no cgroup.kill then) and the cgroup is not
// frozen.
func (h *Handle) SignalAll(ctx context.Context, sig syscall.Signal) error {
	if h.closed {
		return errClosed
	}
	if h.dir < 0 {
		return h.SignalLeader(sig)
	}
	if gone, err := h.cgroupRemoved(); err != nil || gone {
		return err
	}
	return h.tree(nil).Signal(ctx, sig)
}

// SignalAllButLeader is SignalAll for a worker whose leader is a forwarding init (a sandbox's PID 1, which
// passes the signals it receives on to the target): every other process of the worker gets sig directly,
// once, and the leader does not, so the target does not get it a second time through the init. SIGKILL is
// SignalAll: the init must end too. Without a pinned leader (it had exited) it is SignalAll.
func (h *Handle) SignalAllButLeader(ctx context.Context, sig syscall.Signal) error {
	if sig == unix.SIGKILL || h.closed || h.dir < 0 || h.pidfd < 0 || linux.PidfdSignal(h.pidfd, 0) != nil {
		return h.SignalAll(ctx, sig)
	}
	if gone, err := h.cgroupRemoved(); err != nil || gone {
		return err
	}
	// Checked alive through its pidfd just before: an init that ends takes its namespace with it.
	return h.tree([]int{h.id.PID}).Signal(ctx, sig)
}

// tree is the worker's cgroup as pidsignal's one whole-cgroup signal path sees it.
func (h *Handle) tree(skip []int) pidsignal.Tree {
	return pidsignal.Tree{Dir: h.dir, List: func() ([]int, error) { return walkProcs(h.dir) }, Skip: skip, Lock: h.lock}
}

// Populated reports whether the worker still has a process: cgroup.events (or the cgroup.procs of the
// subtree on v1) through the pinned fd; for a handle without a cgroup, whether the leader has not exited.
func (h *Handle) Populated() (bool, error) {
	if h.closed {
		return false, errClosed
	}
	if h.dir < 0 {
		return h.leaderRunning()
	}
	if gone, err := h.cgroupRemoved(); gone {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return populated(h.dir)
}

// WaitEmpty waits until the worker has no process left (cgroup.events populated 0 through the pinned fd, or
// cgroup.procs polling on v1), or ctx ends. For a handle without a cgroup it waits for the leader to exit.
func (h *Handle) WaitEmpty(ctx context.Context) error {
	if h.closed {
		return errClosed
	}
	if h.dir < 0 {
		return h.waitLeader(ctx)
	}
	if gone, err := h.cgroupRemoved(); gone {
		return nil
	} else if err != nil {
		return err
	}
	err := waitEvent(ctx, h.dir, "populated", "0")
	if errors.Is(err, unix.ENOENT) {
		return waitProcsEmpty(ctx, h.dir)
	}
	if errors.Is(err, unix.ENODEV) {
		return nil // removed while we waited (systemd collects an empty scope): it is empty
	}
	return err
}

// Members lists the PIDs in the worker's cgroup and its descendants, read through the pinned fd (nil once
// the cgroup was removed). A worker's shim, which is a member itself, uses it to see when nothing but itself
// is left: the worker has ended when its cgroup is empty, not when its leader exits. Without a cgroup it is
// the leader while it runs.
func (h *Handle) Members() ([]int, error) {
	if h.closed {
		return nil, errClosed
	}
	if h.dir < 0 {
		if running, err := h.leaderRunning(); err != nil || !running {
			return nil, err
		}
		return []int{h.id.PID}, nil
	}
	if gone, _ := h.cgroupRemoved(); gone {
		return nil, nil
	}
	return walkProcs(h.dir)
}

// cgroupRemoved reports whether the pinned cgroup was removed (rmdir succeeds only on an empty cgroup, so
// its worker is over). The fd still refers to the removed cgroup: its files are gone (ENOENT), and nothing
// created since at the same path can be reached through it. Removal is ErrNotRunning, not a failure.
func (h *Handle) cgroupRemoved() (bool, error) {
	_, err := readAt(h.dir, "cgroup.procs")
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		return true, fmt.Errorf("%w: cgroup %s was removed", ErrNotRunning, h.id.Cgroup)
	}
	return false, err
}

// leaderRunning: a pidfd becomes readable when its process exits.
func (h *Handle) leaderRunning() (bool, error) {
	if h.pidfd < 0 {
		return false, nil
	}
	exited, err := linux.PidfdExited(h.pidfd, 0)
	return !exited, err
}

func (h *Handle) waitLeader(ctx context.Context) error {
	for {
		running, err := h.leaderRunning()
		if err != nil || !running {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for PID %d to exit: %w", h.id.PID, err)
		}
		if _, err := linux.PidfdExited(h.pidfd, 50); err != nil {
			return err
		}
	}
}

// Close releases the pinned fds. It is safe to call more than once.
func (h *Handle) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	closeFD(h.pidfd)
	closeFD(h.dir)
	h.pidfd, h.dir = -1, -1
	return nil
}
