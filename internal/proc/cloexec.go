package proc

import (
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// MarkInheritedCloexec marks every descriptor above 2 close-on-exec, so that a worker gets stdin, stdout
// and stderr and nothing else (hermes' close_fds=True). close_range(CLOSE_RANGE_CLOEXEC) does it in one
// call on kernels 5.11+; older kernels (5.7-5.10 know close_range but not the flag, EINVAL; before 5.9
// there is no close_range, ENOSYS) get the same result by walking /proc/self/fd.
func MarkInheritedCloexec() error {
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	return cloexecByWalk(3)
}

// cloexecByWalk sets FD_CLOEXEC on every open descriptor >= from, as /proc/self/fd lists them.
func cloexecByWalk(from int) error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	self := int(d.Fd())
	if err != nil {
		d.Close()
		return err
	}
	var firstErr error
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < from || fd == self {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF && firstErr == nil {
			firstErr = os.NewSyscallError("fcntl", err)
		}
	}
	d.Close()
	return firstErr
}
