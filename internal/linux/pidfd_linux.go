package linux

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// PidfdOpen pins the process now holding pid. The pidfd keeps referring to that process (not to the
// number) for as long as it is open: once the process is reaped, every use fails with ESRCH even if pid is
// reused. No flags are passed, so EINVAL can only mean that pid is not a thread-group leader. Errors are
// *os.SyscallError wrapping the errno (ESRCH: no such process).
func PidfdOpen(pid int) (int, error) {
	fd, err := Retry(func() (int, error) { return unix.PidfdOpen(pid, 0) })
	if err != nil {
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	return fd, nil
}

// PidfdSignal sends sig to the process pinned by fd (ESRCH once it has been reaped).
func PidfdSignal(fd int, sig syscall.Signal) error {
	if err := RetryErr(func() error { return unix.PidfdSendSignal(fd, sig, nil, 0) }); err != nil {
		return os.NewSyscallError("pidfd_send_signal", err)
	}
	return nil
}

// PidfdAlive reports whether the pinned process has not been reaped yet (a zombie counts as not reaped).
// While it is not reaped its PID number cannot have been reused, so facts read through /proc/<pid> before
// this returns true belong to the pinned process.
func PidfdAlive(fd int) (bool, error) {
	err := PidfdSignal(fd, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	return err == nil, err
}

// PidfdExited waits up to timeoutMs milliseconds (0: not at all, -1: for ever) for the pinned process to
// exit, and reports whether it has: a pidfd becomes readable when its process exits (a zombie has exited).
func PidfdExited(fd, timeoutMs int) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := Poll(fds, timeoutMs)
	return n > 0, err
}

// Poll is poll(2), retried on EINTR; errors are *os.SyscallError.
func Poll(fds []unix.PollFd, timeoutMs int) (int, error) {
	n, err := Retry(func() (int, error) { return unix.Poll(fds, timeoutMs) })
	if err != nil {
		return 0, os.NewSyscallError("poll", err)
	}
	return n, nil
}

// FdinfoPid returns the "Pid:" field of a pidfd's /proc/<pid>/fdinfo/<fd> text: the pinned process's PID
// in the reader's pid namespace, -1 once it has exited, 0 when it is outside that namespace.
// ErrMalformed when there is no such field (not a pidfd's fdinfo).
func FdinfoPid(b []byte) (int, error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return 0, fmt.Errorf("%w: fdinfo Pid %q", ErrMalformed, v)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: fdinfo has no Pid field", ErrMalformed)
}
