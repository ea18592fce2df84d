package fingerprint

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Verify answers what the identity names now. The error is non-nil ONLY when facts could not be read (a
// /proc or cgroupfs read failed); every refusal is a Verdict with a nil error.
//
// The checks run in this order, and the first that decides wins:
//  1. unverified identity -> Unverified;
//  2. another machine id -> ForeignMachine;
//  3. another boot id, or PID 1 started at another tick (another life of this PID namespace) -> ForeignBoot;
//  4. the cgroup directory is gone -> Exited; it exists with another inode (removed and re-created at the
//     same path) -> Recycled; it is empty -> Exited;
//  5. the leader PID is alive but its start time differs, or it is not a member of the cgroup -> Recycled;
//  6. the leader is dead but the cgroup is populated -> Running (the tree lives; the Reason says so);
//     without a cgroup, a dead leader -> Exited;
//  7. otherwise -> Running.
//
// The leader and cgroup are pinned (pidfd, directory fd) while they are checked, exactly as Authorize does,
// so the facts of one verdict all belong to the same process and cgroup.
func Verify(src Sources, id Identity) (Verdict, error) {
	h, v, err := inspect(src, id, true)
	if h != nil {
		h.Close()
	}
	return v, err
}

// Authorize verifies id and, only when the verdict is Running, returns a Handle holding pinned authority
// over the worker: a pidfd of the leader (when it is alive) and a directory fd of the cgroup whose inode is
// id.CgroupID, with the leader's membership and start time re-checked after both were pinned. For any other
// verdict it returns a nil Handle, the verdict, and a *RefusalError (errors.Is ErrRefused, or ErrNotRunning
// for Exited); an error that is not a RefusalError means facts could not be read.
func Authorize(src Sources, id Identity) (*Handle, Verdict, error) {
	return authorize(src, id, true)
}

func authorize(src Sources, id Identity, checkMachine bool) (*Handle, Verdict, error) {
	h, v, err := inspect(src, id, checkMachine)
	if err != nil {
		return nil, Verdict{}, err
	}
	if v.State != Running {
		return nil, v, &RefusalError{Verdict: v}
	}
	return h, v, nil
}

// inspect pins the worker and judges it; it returns a Handle only for Running.
func inspect(src Sources, id Identity, checkMachine bool) (*Handle, Verdict, error) {
	if id.Unverified {
		return nil, verdict(Unverified, "identity was not fully captured (%s); it is never signalled", id.Reason), nil
	}
	if checkMachine {
		m, err := src.machineID()
		if err != nil {
			return nil, Verdict{}, err
		}
		if m != id.MachineID {
			return nil, verdict(ForeignMachine, "recorded on machine %s, this is machine %s", id.MachineID, m), nil
		}
	}
	boot, err := src.bootID()
	if err != nil {
		return nil, Verdict{}, err
	}
	if boot != id.BootID {
		return nil, verdict(ForeignBoot, "recorded in boot %s, this is boot %s", id.BootID, boot), nil
	}
	p1, err := readStatFile(src.statPath(1))
	if err != nil {
		return nil, Verdict{}, fmt.Errorf("pid 1 start time: %w", err)
	}
	if p1.Start != id.PID1Start {
		return nil, verdict(ForeignBoot, "PID 1 started at tick %d, recorded %d: another life of this PID namespace", p1.Start, id.PID1Start), nil
	}
	if id.PID <= 0 {
		return nil, verdict(Malformed, "pid %d is not a process", id.PID), nil
	}

	h := &Handle{id: id, dir: -1, pidfd: -1}
	keep := false
	defer func() {
		if !keep {
			h.Close()
		}
	}()

	if id.Cgroup != "" {
		h.dir, err = openCgroupDir(src.cgroupRoot(), id.Cgroup)
		if gone(err) {
			return endedOrRecycled(src, id, "cgroup %s is gone", id.Cgroup)
		}
		if err != nil {
			return nil, Verdict{}, err
		}
		ino, err := dirIno(h.dir)
		if err != nil {
			return nil, Verdict{}, err
		}
		if ino != id.CgroupID {
			return nil, verdict(Recycled, "cgroup %s was re-created (id %d, recorded %d)", id.Cgroup, ino, id.CgroupID), nil
		}
		pop, err := populated(h.dir)
		if err != nil {
			return nil, Verdict{}, fmt.Errorf("cgroup %s: %w", id.Cgroup, err)
		}
		if !pop {
			return endedOrRecycled(src, id, "cgroup %s is empty", id.Cgroup)
		}
	}

	v, err := judgeLeader(src, h)
	if err != nil || v.State != Running {
		return nil, v, err
	}
	keep = true
	return h, v, nil
}

// judgeLeader pins the leader with a pidfd, then reads its start time and membership, then checks the pidfd
// still shows it unreaped: only then are the facts known to be the pinned process's, not a successor's.
// On Running with a live leader, h.pidfd is kept.
func judgeLeader(src Sources, h *Handle) (Verdict, error) {
	id := h.id
	leaderGone := func(how string) Verdict {
		if h.dir >= 0 {
			return verdict(Running, "leader PID %d %s; the rest of cgroup %s still runs", id.PID, how, id.Cgroup)
		}
		return verdict(Exited, "PID %d %s", id.PID, how)
	}
	pidfd, err := linux.PidfdOpen(id.PID)
	if errors.Is(err, unix.ESRCH) {
		return leaderGone("has exited"), nil
	}
	if errors.Is(err, unix.EINVAL) {
		return leaderGone("has exited (its number now names a thread of another process)"), nil
	}
	if err != nil {
		return Verdict{}, err
	}
	st, err := readStatFile(src.statPath(id.PID))
	if gone(err) {
		closeFD(pidfd)
		return leaderGone("has exited"), nil
	}
	if err != nil {
		closeFD(pidfd)
		return Verdict{}, err
	}
	member := true
	if h.dir >= 0 {
		if member, err = isMember(h.dir, id.PID); err != nil {
			closeFD(pidfd)
			return Verdict{}, fmt.Errorf("cgroup %s membership: %w", id.Cgroup, err)
		}
	}
	alive, err := linux.PidfdAlive(pidfd)
	if err != nil {
		closeFD(pidfd)
		return Verdict{}, err
	}
	switch {
	case !alive:
		closeFD(pidfd)
		return leaderGone("has exited"), nil
	case st.Dead():
		// A zombie has left its cgroup already; it is the leader (or a dead stranger), never signallable.
		closeFD(pidfd)
		return leaderGone("has exited (not yet reaped)"), nil
	case st.Start != id.Start:
		closeFD(pidfd)
		return verdict(Recycled, "PID %d now names another process (started at tick %d, recorded %d)", id.PID, st.Start, id.Start), nil
	case !member && exitingNow(src, id):
		// It left cgroup.procs because it is exiting (the kernel drops a dying leader from it before it is
		// a zombie), not because it moved: read again after the membership, which the first read preceded.
		closeFD(pidfd)
		return leaderGone("is exiting"), nil
	case !member:
		closeFD(pidfd)
		// The recorded start time matches: most likely the leader itself moved out of its cgroup (an
		// unsandboxed worker that may write cgroupfs can), rarely another process started in the same tick.
		// Either way it is outside what hlaunch holds: refused, and said so.
		return verdict(Recycled, "PID %d has the leader's start time but is not in cgroup %s: the leader left its cgroup, or its PID was reused within one tick", id.PID, id.Cgroup), nil
	}
	h.pidfd = pidfd
	if h.dir >= 0 {
		return verdict(Running, "leader PID %d is alive in cgroup %s", id.PID, id.Cgroup), nil
	}
	return verdict(Running, "PID %d is alive with the recorded start time", id.PID), nil
}

// exitingNow reports the process at id.PID, read now, exiting or exited (or gone).
func exitingNow(src Sources, id Identity) bool {
	st, err := readStatFile(src.statPath(id.PID))
	return gone(err) || err == nil && st.Exiting()
}

// endedOrRecycled judges a worker whose cgroup is gone or empty: exited, unless a live process now holds
// the leader's PID. With another start time the PID has been recycled: say so, because a caller that still
// trusts the bare PID is about to hit a stranger. With the leader's start time the leader has left its
// cgroup: the cgroup is empty, but the worker is not over.
func endedOrRecycled(src Sources, id Identity, format string, args ...any) (*Handle, Verdict, error) {
	st, err := readStatFile(src.statPath(id.PID))
	if err == nil && !st.Exiting() {
		why := fmt.Sprintf(format, args...)
		if st.Start == id.Start {
			// The leader's own PID and start time, outside its cgroup: it left (escaped) before the cgroup
			// emptied. Not "exited": something of the worker still runs where hlaunch cannot see it.
			return nil, verdict(Recycled, "%s, but PID %d has the leader's start time: the leader left its cgroup, or its PID was reused within one tick", why, id.PID), nil
		}
		return nil, verdict(Recycled, "%s, and PID %d now names another process (started at tick %d, recorded %d)", why, id.PID, st.Start, id.Start), nil
	}
	return nil, verdict(Exited, format, args...), nil
}
