package fingerprint

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// maxReasonLen keeps an unverified identity's reason (and so its token) short.
const maxReasonLen = 512

// Capture records the identity of the worker whose leader is pid and whose cgroup is cgroupPath (relative to
// src.CgroupRoot; empty when the worker has no cgroup of its own). It never fails: when any part cannot be
// captured, or the leader is not a member of the cgroup, it returns what it has with Unverified set and a
// Reason, and such an identity is never signalled.
//
// The leader is pinned with a pidfd for the duration of the capture, and its start time and membership are
// read while the pidfd shows it unreaped, so the facts cannot belong to a process that reused the PID.
// Capture the identity before the worker can exit (the launcher does it while the child waits to exec).
func Capture(src Sources, pid int, cgroupPath string) Identity {
	return capture(src, pid, cgroupPath, false)
}

// CaptureChild is Capture for a process that is the caller's own unreaped child, started inside
// cgroupPath (cloned there, or forked by a member of it): its PID cannot be reused before the caller waits
// for it and its cgroup is known by construction, so a child that has already exited (a zombie) still gets
// a verified identity. A worker's shim uses it, so that even /bin/true is identified.
func CaptureChild(src Sources, pid int, cgroupPath string) Identity {
	return capture(src, pid, cgroupPath, true)
}

func capture(src Sources, pid int, cgroupPath string, child bool) Identity {
	id := Identity{Version: FormatVersion, PID: pid}
	var fails []string
	fail := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }

	var err error
	if id.MachineID, err = src.machineID(); err != nil {
		fail("%v", err)
	}
	if id.BootID, err = src.bootID(); err != nil {
		fail("%v", err)
	}
	if st, err := readStatFile(src.statPath(1)); err != nil {
		fail("pid 1 start time: %v", err)
	} else {
		id.PID1Start = st.Start
	}

	dir := -1
	if cgroupPath != "" {
		if id.Cgroup, err = cleanCgroupPath(cgroupPath); err != nil {
			fail("%v", err)
		} else if dir, err = openCgroupDir(src.cgroupRoot(), id.Cgroup); err != nil {
			fail("cgroup: %v", err)
		} else if id.CgroupID, err = dirIno(dir); err != nil {
			fail("cgroup id: %v", err)
		}
	}
	defer closeFD(dir)

	if pid <= 0 {
		fail("pid %d is not a process", pid)
	} else if err := captureLeader(src, &id, dir, child); err != nil {
		fail("leader: %v", err)
	}

	if len(fails) > 0 {
		id.Unverified = true
		id.Reason = oneLine(strings.Join(fails, "; "))
		if len(id.Reason) > maxReasonLen {
			id.Reason = id.Reason[:maxReasonLen]
		}
	}
	return id
}

// captureLeader reads the leader's start time and checks its membership while a pidfd pins it.
func captureLeader(src Sources, id *Identity, dir int, child bool) error {
	pidfd, err := linux.PidfdOpen(id.PID)
	if err != nil {
		return err
	}
	defer closeFD(pidfd)
	st, err := readStatFile(src.statPath(id.PID))
	if err != nil {
		return err
	}
	if child {
		// Our unreaped child: the stat we read is its own (alive or zombie), and it was born in the cgroup.
		id.Start = st.Start
		return nil
	}
	member := true
	if dir >= 0 {
		if member, err = isMember(dir, id.PID); err != nil {
			return fmt.Errorf("cgroup membership: %w", err)
		}
	}
	alive, err := linux.PidfdAlive(pidfd)
	if err != nil {
		return err
	}
	if !alive || st.Dead() {
		return fmt.Errorf("pid %d exited before its identity was captured", id.PID)
	}
	if !member {
		return fmt.Errorf("pid %d is not a member of cgroup %s", id.PID, id.Cgroup)
	}
	id.Start = st.Start
	return nil
}

// readStatFile reads and parses a /proc/<pid>/stat file. A vanished process is ESRCH or ENOENT (kept in the
// chain for errors.Is).
func readStatFile(path string) (linux.Stat, error) {
	f, err := os.Open(path)
	if err != nil {
		return linux.Stat{}, err
	}
	defer f.Close()
	st, err := linux.ReadStat(f)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return linux.Stat{}, &os.PathError{Op: "read", Path: path, Err: err}
		}
		return linux.Stat{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// gone reports errors meaning "that process no longer exists".
func gone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH)
}
