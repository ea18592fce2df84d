package handshake

import (
	"os"

	"golang.org/x/sys/unix"
)

// startUnmasked re-executes the stub once, with no signal blocked, when it started with some blocked.
//
// A process keeps its signal mask across fork and execve, and the Go runtime gives every child it forks
// the mask the process started with, whatever its threads do later. So a launcher started by a sloppy
// supervisor with SIGTERM blocked would start a worker that never hears a stop's SIGTERM. The stub is
// the one process of a launch whose start-up mask decides the target's; it clears its thread's mask and
// execs itself again, which costs a Go start-up only in that rare case. It must run before the protocol
// descriptors are marked close-on-exec (MaybeRunInternal did so; this undoes it for fds 3 and 4).
func startUnmasked() {
	var cur unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, nil, &cur); err != nil || cur == (unix.Sigset_t{}) {
		return
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &unix.Sigset_t{}, nil); err != nil {
		return
	}
	for _, fd := range []int{ConfigFD, ResultFD} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return
		}
	}
	_ = unix.Exec("/proc/self/exe", os.Args, os.Environ())
	// The exec failed: go on with the mask as it is, the descriptors close-on-exec again.
	unix.CloseOnExec(ConfigFD)
	unix.CloseOnExec(ResultFD)
}
