package fingerprint

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// retryEINTR is the one place interrupted system calls are retried: Go installs its signal handlers with
// SA_RESTART, but not every call is restarted (pidfd_send_signal, poll), so each raw call goes through here.
func retryEINTR[T any](fn func() (T, error)) (T, error) {
	for {
		v, err := fn()
		if !errors.Is(err, unix.EINTR) {
			return v, err
		}
	}
}

// pidfdOpen pins the process now holding pid. The pidfd keeps referring to that process (not to the number)
// for as long as it is open: once the process is reaped, every use fails with ESRCH even if pid is reused.
// No flags are passed, so EINVAL can only mean that pid is not a thread-group leader: the number now names
// a thread of some process, never a worker's leader.
func pidfdOpen(pid int) (int, error) {
	fd, err := retryEINTR(func() (int, error) { return unix.PidfdOpen(pid, 0) })
	if err != nil {
		return -1, os.NewSyscallError("pidfd_open", err)
	}
	return fd, nil
}

// pidfdSignal sends sig to the process pinned by fd.
func pidfdSignal(fd int, sig syscall.Signal) error {
	_, err := retryEINTR(func() (struct{}, error) {
		return struct{}{}, unix.PidfdSendSignal(fd, sig, nil, 0)
	})
	if err != nil {
		return os.NewSyscallError("pidfd_send_signal", err)
	}
	return nil
}

// pidfdAlive reports whether the pinned process has not been reaped yet (a zombie counts as not reaped).
// While it is not reaped its PID number cannot have been reused, so facts read through /proc/<pid> before
// this returns true belong to the pinned process.
func pidfdAlive(fd int) (bool, error) {
	err := pidfdSignal(fd, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	return err == nil, err
}

func closeFD(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}
