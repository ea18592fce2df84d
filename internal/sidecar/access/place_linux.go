package access

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/linux"
)

// Place is where the connecting process runs: its pid namespace and its v2 cgroup as this process's
// cgroup namespace names it. Both are read while the kernel's pidfd of the connecting process shows it
// alive, so they cannot be another process's facts.
type Place struct {
	PidNS  string // the target of /proc/<pid>/ns/pid, e.g. "pid:[4026531836]"
	Cgroup string // the "0::" line of /proc/<pid>/cgroup, cleaned; "" when outside or none
	// Outside is that line as read when it lies outside this process's cgroup namespace ("/../x": a
	// client of a sidecar run in a container's or a test manager's namespace). Nothing under our mount is
	// named by it; only the names in it can be read.
	Outside string
}

// PlaceOf reads where c's peer (SO_PEERCRED pid) runs. With SO_PEERPIDFD (Linux 6.5+) the pidfd is the
// connecting process itself; before that it is opened by number, and a peer that exited and whose PID
// was taken over in between could be read in its successor's place (docs/security.md). A peer that is not
// visible in our pid namespace (pid 0), or that has exited, is an error: such a peer is refused.
func PlaceOf(c net.Conn, pid int32) (Place, error) {
	if pid <= 0 {
		return Place{}, errors.New("the peer's PID is not visible in the sidecar's pid namespace")
	}
	pidfd, err := peerPidfd(c, int(pid))
	if err != nil {
		return Place{}, err
	}
	defer unix.Close(pidfd)
	var p Place
	if p.PidNS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil {
		return Place{}, fmt.Errorf("the peer's pid namespace: %w", err)
	}
	// A peer outside this process's cgroup namespace reads as "/../x", which names nothing under our mount
	// (cleaned, it would be "/x", another cgroup): kept apart by that path, as the one read gave it
	// (cgroup.OutsideNamespaceError). A host without a v2 hierarchy has no "0::" line: no cgroup to tell.
	p.Cgroup, err = cgroup.ProcCgroup2(int(pid))
	var outside *cgroup.OutsideNamespaceError
	switch {
	case errors.Is(err, cgroup.ErrNotFound):
		p.Cgroup, err = "", nil
	case errors.As(err, &outside):
		p.Cgroup, p.Outside, err = "", outside.Path, nil
	}
	if err != nil {
		return Place{}, fmt.Errorf("the peer's cgroup: %w", err)
	}
	if !pidfdShows(pidfd, int(pid)) {
		return Place{}, fmt.Errorf("the peer (pid %d) exited while it was looked at", pid)
	}
	return p, nil
}

// peerPidfd returns a pidfd of the connecting process: SO_PEERPIDFD where the kernel has it, else
// pidfd_open of its PID. It fails when the process is gone or its PID is not the connecting one's.
func peerPidfd(c net.Conn, pid int) (int, error) {
	fd := -1
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			_ = raw.Control(func(s uintptr) {
				if n, err := unix.GetsockoptInt(int(s), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
					fd = n
				}
			})
		}
	}
	if fd < 0 {
		n, err := linux.PidfdOpen(pid)
		if err != nil {
			return -1, fmt.Errorf("the peer (pid %d) is gone: %w", pid, err)
		}
		fd = n
	}
	if !pidfdShows(fd, pid) {
		unix.Close(fd)
		return -1, fmt.Errorf("the peer (pid %d) has exited", pid)
	}
	return fd, nil
}

// pidfdShows reports whether pidfd refers to a live process that has PID pid in our pid namespace
// (fdinfo "Pid:" is -1 once it exited, 0 outside our namespace).
func pidfdShows(pidfd, pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", pidfd))
	if err != nil {
		return false
	}
	n, err := linux.FdinfoPid(b)
	return err == nil && n == pid
}
