package seccomp

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install puts f on every thread of the calling process (SECCOMP_FILTER_FLAG_TSYNC: a Go process has
// several, and a filter on one thread alone would leave the others, and what they fork, unfiltered). The
// caller has set no_new_privs (or holds CAP_SYS_ADMIN); the filter is inherited by every child and
// survives execve, and nothing can remove it.
func (f *Filter) Install() error {
	if len(f.insts) == 0 {
		return fmt.Errorf("seccomp: empty filter")
	}
	prog := unix.SockFprog{Len: uint16(len(f.insts)), Filter: &f.insts[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return os.NewSyscallError("seccomp(SECCOMP_SET_MODE_FILTER)", errno)
	}
	if r != 0 {
		// TSYNC's failure: the id of a thread that cannot take the filter (it has a diverging one).
		return fmt.Errorf("seccomp: thread %d could not be synchronised", r)
	}
	return nil
}
