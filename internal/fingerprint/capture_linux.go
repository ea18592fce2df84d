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

// CaptureChild records the identity of the worker whose leader is pid, the caller's own unreaped child,
// started inside the cgroup cgroupPath (relative to src.CgroupRoot; empty when the worker has no cgroup of
// its own): cloned there, or forked by a member of it. Its PID cannot be reused before the caller waits for
// it, and its cgroup is known by construction, so a child that has already exited (a zombie) still gets a
// verified identity: a worker's shim uses it, so that even /bin/true is identified.
//
// It never fails: when any part cannot be captured it returns what it has with Unverified set and a
// Reason, and such an identity is never signalled.
func CaptureChild(src Sources, pid int, cgroupPath string) Identity {
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
	} else if err := captureLeader(src, &id); err != nil {
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

// captureLeader reads the leader's start time while a pidfd pins it: the stat read is the caller's
// child's own, alive or a zombie.
func captureLeader(src Sources, id *Identity) error {
	pidfd, err := linux.PidfdOpen(id.PID)
	if err != nil {
		return err
	}
	defer closeFD(pidfd)
	st, err := readStatFile(src.statPath(id.PID))
	if err != nil {
		return err
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
