package handshake

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// startUnmasked re-executes the stub once, with no signal blocked, when it started with some blocked.
//
// A process keeps its signal mask across fork and execve, and the Go runtime gives every child it forks
// the mask the process started with, whatever its threads do later. So a launcher started by a sloppy
// supervisor with SIGTERM blocked would start a worker that never hears a stop's SIGTERM. The stub is
// the one process of a launch whose start-up mask decides the target's; it clears its thread's mask and
// execs itself again, which costs a Go start-up only in that rare case. It must run before the protocol
// descriptors are marked close-on-exec (MaybeRunInternal did so; this undoes it for fds 3, 4 and 5).
func startUnmasked() {
	var cur unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, nil, &cur); err != nil || cur == (unix.Sigset_t{}) {
		return
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &unix.Sigset_t{}, nil); err != nil {
		return
	}
	for _, fd := range []int{ConfigFD, ResultFD, StatusFD} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return
		}
	}
	_ = unix.Exec("/proc/self/exe", os.Args, os.Environ())
	// The exec failed: go on with the mask as it is, the descriptors close-on-exec again.
	unix.CloseOnExec(ConfigFD)
	unix.CloseOnExec(ResultFD)
	unix.CloseOnExec(StatusFD)
}

// sigaction is the kernel's struct sigaction on amd64 and arm64 (handler, flags, restorer, mask).
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// defaultIgnored resets to the default every signal that is ignored now, before the target is started:
// an ignored signal stays ignored across fork and execve. The Go runtime handles almost every signal
// itself (a handled signal is reset by execve), but leaves alone SIGHUP and SIGINT when they were ignored
// at start-up and never notified, and the signals it only marks for its alternate stack (32 and 33, which
// a C library reserves): those a launcher started with ignored would be ignored in the worker. The one
// use of unsafe in this package: rt_sigaction takes pointers to the structure.
func defaultIgnored() {
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(unix.SIGKILL) || sig == uintptr(unix.SIGSTOP) {
			continue
		}
		var old sigaction
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); errno != 0 {
			continue
		}
		if old.handler != 1 { // SIG_IGN
			continue
		}
		dfl := sigaction{}
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	}
}
